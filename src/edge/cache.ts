import { LRUCache } from 'lru-cache';
import { blobKeyForHash, type BlobStore } from '../blob/index.js';
import type { Config } from '../config/index.js';
import type { DeploysService, FilesService } from '../files/index.js';
import { normalizeHost, type HostRoute as RouteOf } from '../http/index.js';
import { tallyCounter, type Logger } from '../observability/index.js';
import type { Platform, SiteEvents } from '../platform/index.js';
import { compress, type Encoding } from './compression.js';
import { FOLDER, MISSING, fileEntry, type FileEntry, type PathEntry } from './entries.js';
import { DiskCache } from './disk-cache.js';
import { decodeSitePath, namesDatabaseFile } from './paths.js';
import { edgeCacheEvents } from './metrics.js';
import { SyncWindow } from './sync.js';

export interface EdgeOptions {
  /** Blobs up to this size are kept in memory. */
  maxCachedBlobBytes?: number;
  /** Total memory for cached blobs and their compressed variants (default: HOSTPLANE_EDGE_CACHE_MB). */
  blobCacheBytes?: number;
  /** How long hosts, path entries and resolutions are kept: the safety net for missed invalidations. */
  cacheTtlMs?: number;
  /** Overrides config.edge.syncWindowMs (see `fresh`); null: no sync loop (a role serving no sites). */
  syncWindowMs?: number | null;
  /** Overrides config.edge.leaseMs: this edge process's registration lease (see sync.ts). */
  leaseMs?: number;
  /** Overrides config.edge.diskCache.maxBytes: the disk cache of large blobs (0: off, a role serving no sites). */
  diskCacheBytes?: number;
  /** Where the disk cache warns (a folder it cannot use, a failed fill). */
  logger?: Logger;
}

/**
 * A preview host's label: `<deploy id>--<slug>`. A label of this shape is only ever a preview: no
 * slug may contain `--` (platform/slug.ts), and a site whose slug spells one (made before that
 * rule) is never served on it, so a preview host that names no previewable deploy (pruned, never
 * finalized, made up) answers 404 for good, never another tenant's site.
 */
const PREVIEW_LABEL = /^([a-z2-7]{12})--(.+)$/;

export interface SiteRef {
  id: number;
  /** A preview host (`<deploy id>--<slug>`): the deploy's manifest, not the live file set. */
  deployId?: string;
  /**
   * Previews: the site's generation when the deploy was found previewable. A switch prunes deploys
   * and moves the generation (acknowledged by every edge before it returns), so a cached preview
   * host of an older generation is looked up again: a pruned preview answers 404 at once.
   */
  generation?: number;
}

/** A preview-shaped host with no previewable deploy behind it: a 404 (noindex), never a site. */
export const NO_SUCH_PREVIEW: SiteRef = Object.freeze({ id: 0, deployId: '', generation: 0 });

/** What a Host header means to the edge (see the HostHandler it implements). */
export type HostRoute = RouteOf<SiteRef>;
const NOT_A_SITE_HOST: HostRoute = { serve: false };
const NO_SUCH_SITE: HostRoute = { serve: true, site: undefined };

/** What a URL path of a site answers with. */
export type Resolution =
  | { type: 'file'; entry: FileEntry }
  | { type: 'redirect'; path: string }
  | { type: 'notFound'; page: FileEntry | undefined };

// Tallied per lookup, folded into the counter when /metrics is read.
const cacheEvents = {
  manifestHit: tallyCounter(edgeCacheEvents, { cache: 'manifest', result: 'hit' }),
  manifestMiss: tallyCounter(edgeCacheEvents, { cache: 'manifest', result: 'miss' }),
  blobHit: tallyCounter(edgeCacheEvents, { cache: 'blob', result: 'hit' }),
  blobMiss: tallyCounter(edgeCacheEvents, { cache: 'blob', result: 'miss' }),
};

/** Compressions running at once (each a libuv thread-pool job; the pool has four threads). */
const MAX_CONCURRENT_COMPRESSIONS = 2;

/**
 * The edge's state, all of it caches: Host → site, (site, generation, URL path) → resolution,
 * (site, generation, site path) → file entry, and content-addressed bytes with their compressed
 * variants. A site change bumps its generation, so entries of the old one are never read again.
 */
export class EdgeCache {
  private readonly hosts: LRUCache<string, HostRoute>;
  private readonly pathEntries: LRUCache<string, PathEntry>;
  private readonly routes: LRUCache<string, Resolution>;
  private readonly blobs: LRUCache<string, Buffer>;
  private readonly loading = new Map<string, Promise<Buffer>>();
  private readonly compressing = new Set<string>();
  private readonly generation = new Map<number, number>();
  /** Bumped when events may have been missed: keys (and hosts) read before it are never filed. */
  private epoch = 0;
  private readonly baseHost: string;
  private readonly sitesSuffix: string;
  readonly maxCachedBlobBytes: number;
  /** Blobs over maxCachedBlobBytes, on local disk (see disk-cache.ts). */
  readonly disk: DiskCache;
  private readonly stops: Array<() => void>;
  private readonly sync: SyncWindow;

  constructor(
    private readonly config: Config,
    private readonly platform: Platform,
    private readonly files: FilesService,
    private readonly deploys: DeploysService,
    private readonly blobStore: BlobStore,
    events: SiteEvents,
    options: EdgeOptions = {},
  ) {
    const ttl = options.cacheTtlMs ?? 30_000;
    this.maxCachedBlobBytes = options.maxCachedBlobBytes ?? 1024 * 1024;
    this.baseHost = new URL(config.baseUrl).hostname;
    this.sitesSuffix = `.${config.sitesDomain}`;
    // Bounded by bytes, not only entries: keys come from clients (hosts and paths are length-checked too).
    this.hosts = new LRUCache({
      max: 10_000,
      maxSize: 4 << 20,
      sizeCalculation: (_v, k) => k.length + 64,
      ttl,
    });
    this.pathEntries = new LRUCache({
      max: 100_000,
      maxSize: 32 << 20,
      sizeCalculation: (_v, k) => k.length + 400,
      ttl,
    });
    this.routes = new LRUCache({
      max: 100_000,
      maxSize: 16 << 20,
      sizeCalculation: (_v, k) => k.length + 64,
      ttl,
    });
    this.blobs = new LRUCache({
      maxSize: options.blobCacheBytes ?? config.edge.cacheBytes,
      sizeCalculation: (b) => Math.max(1, b.length),
    });
    this.disk = new DiskCache(
      config.edge.diskCache.dir,
      options.diskCacheBytes ?? config.edge.diskCache.maxBytes,
      blobStore,
      options.logger,
    );
    this.sync = new SyncWindow(
      events,
      options.syncWindowMs === null ? undefined : (options.syncWindowMs ?? config.edge.syncWindowMs),
      options.leaseMs ?? config.edge.leaseMs,
      () => this.dropAll(),
    );
    const nextGeneration = (siteId: number) =>
      this.generation.set(siteId, (this.generation.get(siteId) ?? 0) + 1);
    this.stops = [
      events.subscribe({
        contentChanged: nextGeneration,
        // Slug renames and custom-domain changes are rare: forget every host → site mapping.
        routesChanged: () => this.hosts.clear(),
        siteRemoved: (siteId) => {
          nextGeneration(siteId);
          this.hosts.clear();
        },
        // e.g. after a lost NOTIFY connection, when changes may have been missed.
        missed: () => this.dropAll(),
      }),
    ];
    this.stops.push(this.sync.start());
  }

  /** Forgets every path entry, resolution and host; a lookup in flight files nothing (epoch). */
  private dropAll(): void {
    this.epoch += 1;
    this.pathEntries.clear();
    this.routes.clear();
    this.hosts.clear();
  }

  close(): void {
    for (const stop of this.stops) stop();
    this.disk.close();
  }

  /** Whether the path caches may answer a request that started at `startedAt` (previews always may). */
  private fresh(site: SiteRef, startedAt = performance.now()): boolean {
    return site.deployId !== undefined || this.sync.fresh(startedAt);
  }

  /** Waits for a shared sync round trip when the caches are stale for this request (see sync.ts). */
  private async catchUp(site: SiteRef, startedAt: number): Promise<void> {
    if (site.deployId === undefined) await this.sync.catchUp(startedAt);
  }

  /** The cached meaning of a raw Host header, if any (no work beyond one lookup). */
  cachedHost(hostHeader: string | undefined): HostRoute | undefined {
    if (hostHeader === undefined) return NOT_A_SITE_HOST;
    const route = this.hosts.get(hostHeader);
    const site = route?.serve ? route.site : undefined;
    if (site?.deployId !== undefined && site.generation !== (this.generation.get(site.id) ?? 0))
      return undefined;
    return route;
  }

  async lookupHost(hostHeader: string | undefined): Promise<HostRoute> {
    if (hostHeader === undefined) return NOT_A_SITE_HOST;
    const epoch = this.epoch;
    const hostname = normalizeHost(hostHeader);
    let route: HostRoute = NOT_A_SITE_HOST;
    if (hostname && hostname !== this.baseHost) {
      if (hostname.endsWith(this.sitesSuffix)) {
        const label = hostname.slice(0, -this.sitesSuffix.length);
        if (label.includes('.')) route = NO_SUCH_SITE;
        else if (PREVIEW_LABEL.test(label))
          route = { serve: true, site: (await this.previewOf(label)) ?? NO_SUCH_PREVIEW };
        else {
          const site = await this.platform.siteBySlug(label);
          route = site ? { serve: true, site: { id: site.id } } : NO_SUCH_SITE;
        }
      } else {
        const site = await this.platform.siteByCustomDomain(hostname);
        if (site) route = { serve: true, site: { id: site.id } };
      }
    }
    // Unknown hosts are remembered briefly only, so a new site is served within seconds; previews
    // too, since a draft's finalize may prune others without moving the site's generation.
    const known = route.serve && route.site !== undefined && route.site.deployId === undefined;
    if (epoch === this.epoch) this.hosts.set(hostHeader, route, known ? {} : { ttl: 2000 });
    return route;
  }

  /** `<deploy id>--<slug>`: the deploy's preview, when the site has such a finished deploy. */
  private async previewOf(label: string): Promise<SiteRef | undefined> {
    const match = PREVIEW_LABEL.exec(label);
    if (!match) return undefined;
    const site = await this.platform.siteBySlug(match[2]!);
    if (!site) return undefined;
    // Read before the lookup: a prune committed while it runs moves it, and the entry is not reused.
    const generation = this.generation.get(site.id) ?? 0;
    if (!(await this.deploys.previewable(site.id, match[1]!))) return undefined;
    return { id: site.id, deployId: match[1]!, generation };
  }

  private routeKey(site: SiteRef, urlPath: string): string {
    // A deploy's manifest never changes: its entries need no generation.
    if (site.deployId !== undefined) return `d:${site.deployId}:${urlPath}`;
    return `${this.epoch}:${site.id}:${this.generation.get(site.id) ?? 0}:${urlPath}`;
  }

  /** A cached resolution of a URL path (raw, before decoding, without the query). */
  cachedResolution(site: SiteRef, urlPath: string): Resolution | undefined {
    if (!this.fresh(site)) return undefined;
    const hit = this.routes.get(this.routeKey(site, urlPath));
    if (hit) cacheEvents.manifestHit.inc();
    return hit;
  }

  async resolve(site: SiteRef, urlPath: string): Promise<Resolution> {
    const startedAt = performance.now();
    await this.catchUp(site, startedAt);
    if (this.fresh(site, startedAt)) {
      const hit = this.routes.get(this.routeKey(site, urlPath));
      if (hit) {
        cacheEvents.manifestHit.inc();
        return hit;
      }
    }
    const key = this.routeKey(site, urlPath);
    const resolution = await this.resolveUncached(site, urlPath, startedAt);
    this.routes.set(key, resolution);
    return resolution;
  }

  private async resolveUncached(site: SiteRef, urlPath: string, startedAt: number): Promise<Resolution> {
    const sitePath = decodeSitePath(urlPath);
    // SQLite database files are never served, under any spelling of their path.
    if (sitePath === undefined || namesDatabaseFile(sitePath)) return this.notFound(site, startedAt);
    const target = sitePath === '' || sitePath.endsWith('/') ? `${sitePath}index.html` : sitePath;
    // `/blog` → `/blog/` when blog/ has an index, like every static host.
    const redirects = !sitePath.endsWith('/') && sitePath !== '';
    const cached = this.cachedEntry(site, target, startedAt);
    if (cached?.kind === 'file') return { type: 'file', entry: cached };
    // Every path this URL may need, in one query: a miss costs one round trip, not up to three.
    const paths = redirects ? [target, `${sitePath}/index.html`, '404.html'] : [target, '404.html'];
    const entries = await this.entries(site, paths, startedAt, [cached]);
    const entry = entries[0]!;
    if (entry.kind === 'file') return { type: 'file', entry };
    // One leading slash only: `//evil.example` must stay a path, not become another host.
    if (redirects && entries[1]!.kind === 'file')
      return { type: 'redirect', path: `/${urlPath.replace(/^\/+/, '')}/` };
    const page = entries.at(-1)!;
    return { type: 'notFound', page: page.kind === 'file' ? page : undefined };
  }

  private async notFound(site: SiteRef, startedAt: number): Promise<Resolution> {
    const [page] = await this.entries(site, ['404.html'], startedAt);
    return { type: 'notFound', page: page?.kind === 'file' ? page : undefined };
  }

  /** A cached entry (counted as a hit), or undefined. */
  private cachedEntry(site: SiteRef, sitePath: string, startedAt: number): PathEntry | undefined {
    if (!this.fresh(site, startedAt)) return undefined;
    const cached = this.pathEntries.get(this.routeKey(site, sitePath));
    if (cached) cacheEvents.manifestHit.inc();
    return cached;
  }

  /**
   * The entries of some paths of a site: from memory where cached, the rest in one query. The
   * caller passes what it already looked up in the cache for the first paths as `known`.
   */
  private async entries(
    site: SiteRef,
    paths: string[],
    startedAt: number,
    known: Array<PathEntry | undefined> = [],
  ): Promise<PathEntry[]> {
    // Keys before the query: an entry read across a change is filed under the old generation.
    const keys = paths.map((p) => this.routeKey(site, p));
    const found = paths.map((p, i) => (i < known.length ? known[i] : this.cachedEntry(site, p, startedAt)));
    const missing = paths.filter((_, i) => !found[i]);
    if (missing.length === 0) return found as PathEntry[];
    for (const _ of missing) cacheEvents.manifestMiss.inc();
    const fetched =
      site.deployId !== undefined
        ? await this.deploys.previewRows(site.deployId, missing)
        : await this.files.findAll(site.id, missing);
    const rows = new Map(fetched.map((r) => [r.path, r]));
    return paths.map((p, i) => {
      const hit = found[i];
      if (hit) return hit;
      const row = rows.get(p);
      // A SQLite database's entry has no bytes here and is never served.
      const entry =
        !row || row.kind === 'database'
          ? MISSING
          : row.kind === 'folder'
            ? FOLDER
            : fileEntry(row, {
                maxInMemoryBytes: this.maxCachedBlobBytes,
                compression: this.config.edge.compression,
              });
      this.pathEntries.set(keys[i]!, entry);
      return entry;
    });
  }

  /** The bytes of a blob when they are in memory (counted as a hit). */
  cachedBlob(hash: string): Buffer | undefined {
    const bytes = this.blobs.get(hash);
    if (bytes) cacheEvents.blobHit.inc();
    return bytes;
  }

  /** Reads a blob into memory; concurrent misses of one blob share one read. */
  loadBlob(hash: string): Promise<Buffer> {
    let pending = this.loading.get(hash);
    if (!pending) {
      cacheEvents.blobMiss.inc();
      pending = this.blobStore
        .getBuffer(blobKeyForHash(hash))
        .then((bytes) => {
          if (!bytes) throw new Error(`blob ${hash} is missing from the blob store`);
          this.blobs.set(hash, bytes);
          return bytes;
        })
        .finally(() => this.loading.delete(hash));
      this.loading.set(hash, pending);
    }
    return pending;
  }

  /**
   * A compressed variant of an in-memory blob: its bytes when ready, undefined when not (yet) or
   * not worth it. A miss starts the compression in the background: this answer goes out
   * uncompressed, later ones compressed.
   */
  variant(hash: string, encoding: Encoding, identity: Buffer): Buffer | undefined {
    const key = `${hash}:${encoding}`;
    const bytes = this.blobs.get(key);
    if (bytes) return bytes.length > 0 ? bytes : undefined;
    if (!this.compressing.has(key) && this.compressing.size < MAX_CONCURRENT_COMPRESSIONS) {
      this.compressing.add(key);
      compress(identity, encoding)
        // An empty buffer remembers "no gain": under 90 % of the original is worth a variant.
        .then((out) => this.blobs.set(key, out.length < identity.length * 0.9 ? out : Buffer.alloc(0)))
        .catch(() => undefined)
        .finally(() => this.compressing.delete(key));
    }
    return undefined;
  }

  /** Streams a blob (or a range of it) from the blob store. */
  stream(hash: string, range: { start: number; end: number } | undefined) {
    return this.blobStore.get(blobKeyForHash(hash), range);
  }
}
