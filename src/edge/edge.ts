import type { Request, Response } from 'express';
import { LRUCache } from 'lru-cache';
import rangeParser from 'range-parser';
import { blobKeyForHash, type BlobStore } from '../blob/index.js';
import type { Config } from '../config/index.js';
import { MAX_PATH_BYTES, MAX_SEGMENT_BYTES, type FilesService } from '../files/index.js';
import { edgeCacheEvents } from '../observability/index.js';
import type { Platform, SiteEvents } from '../platform/index.js';

export interface EdgeOptions {
  /** Blobs up to this size are kept in memory. */
  maxCachedBlobBytes?: number;
  /** Total memory for cached blobs. */
  blobCacheBytes?: number;
  /** Safety net for missed invalidations (e.g. a dropped LISTEN connection). */
  manifestTtlMs?: number;
}

interface ManifestEntry {
  kind: 'file' | 'folder' | 'missing';
  blobKey?: string;
  size?: number;
  contentType?: string;
}

export interface SiteRef {
  id: number;
}

// Label children bound once: the hot path then skips hashing label sets.
const cacheEvents = {
  manifestHit: edgeCacheEvents.labels('manifest', 'hit'),
  manifestMiss: edgeCacheEvents.labels('manifest', 'miss'),
  blobHit: edgeCacheEvents.labels('blob', 'hit'),
  blobMiss: edgeCacheEvents.labels('blob', 'miss'),
};

const notFoundPage = (
  message: string,
) => `<!doctype html><html><head><meta charset="utf-8"><title>404 Not Found</title></head>
<body><h1>404 Not Found</h1><p>${message}</p></body></html>`;
const noPageHere = notFoundPage('There is no page at this address.');
const noSiteHere = notFoundPage('No site is served at this address.');

/**
 * Serves sites by Host. Holds no state beyond caches: host → site, (site, path) → file entry
 * (dropped when the site changes), and immutable content-addressed blobs.
 */
export class Edge {
  private readonly hosts: LRUCache<string, SiteRef | 'none'>;
  private readonly manifests: LRUCache<string, ManifestEntry>;
  private readonly blobCache: LRUCache<string, Buffer>;
  private readonly maxCachedBlobBytes: number;
  private readonly stopListening: () => void;
  private readonly stopListeningRoutes: () => void;
  private readonly generation = new Map<number, number>();

  constructor(
    private readonly config: Config,
    private readonly platform: Platform,
    private readonly files: FilesService,
    private readonly blobs: BlobStore,
    events: SiteEvents,
    options: EdgeOptions = {},
  ) {
    const ttl = options.manifestTtlMs ?? 30_000;
    this.maxCachedBlobBytes = options.maxCachedBlobBytes ?? 1024 * 1024;
    // Bounded by bytes, not only entries: keys come from clients (hosts and paths are length-checked too).
    this.hosts = new LRUCache({
      max: 10_000,
      maxSize: 4 * 1024 * 1024,
      sizeCalculation: (_v, k) => k.length + 64,
      ttl,
    });
    this.manifests = new LRUCache({
      max: 100_000,
      maxSize: 32 * 1024 * 1024,
      sizeCalculation: (_v, k) => k.length + 128,
      ttl,
    });
    this.blobCache = new LRUCache({
      maxSize: options.blobCacheBytes ?? 64 * 1024 * 1024,
      sizeCalculation: (b) => Math.max(1, b.length),
    });
    // A change bumps the site's generation: manifest keys carry it, so old entries are never read again.
    // `all` (e.g. after a lost NOTIFY connection, when changes may have been missed) drops everything.
    this.stopListening = events.onChanged((siteId) => {
      if (siteId === 'all') {
        this.manifests.clear();
        this.hosts.clear();
        return;
      }
      this.generation.set(siteId, (this.generation.get(siteId) ?? 0) + 1);
    });
    // Slug renames and custom-domain changes are rare: forget every host → site mapping.
    this.stopListeningRoutes = events.onRoutesChanged(() => this.hosts.clear());
  }

  close(): void {
    this.stopListening();
    this.stopListeningRoutes();
  }

  /** The site a Host header names (a subdomain of the sites domain or a custom domain), if any. */
  async siteForHost(hostHeader: string | undefined): Promise<SiteRef | undefined> {
    const hostname = normalizeHost(hostHeader);
    if (!hostname) return undefined;
    const cached = this.hosts.get(hostname);
    if (cached !== undefined) return cached === 'none' ? undefined : cached;
    let site: SiteRef | undefined;
    const slug = this.slugOf(hostname);
    if (slug !== undefined) {
      if (!slug.includes('.')) site = await this.platform.siteBySlug(slug);
    } else {
      site = await this.platform.siteByCustomDomain(hostname);
    }
    // Unknown hosts are remembered briefly only, so a new site is served within seconds.
    this.hosts.set(hostname, site ? { id: site.id } : 'none', site ? {} : { ttl: 2000 });
    return site ? { id: site.id } : undefined;
  }

  /** Is this a `<slug>.<sites domain>` host (whether or not the site exists)? */
  isSiteHostname(hostHeader: string | undefined): boolean {
    const hostname = normalizeHost(hostHeader);
    return hostname !== undefined && this.slugOf(hostname) !== undefined;
  }

  private slugOf(hostname: string): string | undefined {
    const suffix = `.${this.config.sitesDomain}`;
    return hostname.endsWith(suffix) ? hostname.slice(0, -suffix.length) : undefined;
  }

  private async entry(siteId: number, sitePath: string): Promise<ManifestEntry> {
    const key = `${siteId}:${this.generation.get(siteId) ?? 0}:${sitePath}`;
    const cached = this.manifests.get(key);
    if (cached) {
      cacheEvents.manifestHit.inc();
      return cached;
    }
    cacheEvents.manifestMiss.inc();
    const row = await this.files.find(siteId, sitePath);
    const entry: ManifestEntry = !row
      ? { kind: 'missing' }
      : row.kind === 'folder'
        ? { kind: 'folder' }
        : {
            kind: 'file',
            blobKey: row.blobKey ?? '',
            size: row.size,
            contentType: row.contentType ?? 'application/octet-stream',
          };
    this.manifests.set(key, entry);
    return entry;
  }

  /** Serves a request for a site; `site` is passed when the caller already resolved the Host. */
  async handle(req: Request, res: Response, resolved?: SiteRef): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.set('Allow', 'GET, HEAD').status(405).type('text').send('Method Not Allowed');
      return;
    }
    const site = resolved ?? (await this.siteForHost(req.get('host')));
    if (!site) {
      res.status(404).type('html').send(noSiteHere);
      return;
    }
    const sitePath = decodeSitePath(req.path);
    if (sitePath === undefined) {
      await this.notFound(site.id, req, res);
      return;
    }
    const target = sitePath === '' || sitePath.endsWith('/') ? `${sitePath}index.html` : sitePath;
    const entry = await this.entry(site.id, target);
    if (entry.kind === 'file') {
      await this.sendFile(req, res, entry, 200);
      return;
    }
    // `/blog` → `/blog/` when blog/ has an index, like every static host.
    if (!sitePath.endsWith('/') && sitePath !== '') {
      const index = await this.entry(site.id, `${sitePath}/index.html`);
      if (index.kind === 'file') {
        const query = req.originalUrl.includes('?')
          ? req.originalUrl.slice(req.originalUrl.indexOf('?'))
          : '';
        // One leading slash only: `//evil.example` must stay a path, not become another host.
        res.redirect(301, `/${req.path.replace(/^\/+/, '')}/${query}`);
        return;
      }
    }
    await this.notFound(site.id, req, res);
  }

  private async notFound(siteId: number, req: Request, res: Response): Promise<void> {
    const custom = await this.entry(siteId, '404.html');
    if (custom.kind === 'file') {
      await this.sendFile(req, res, custom, 404);
      return;
    }
    res.status(404).type('html').send(noPageHere);
  }

  private async sendFile(req: Request, res: Response, entry: ManifestEntry, status: number): Promise<void> {
    const hash = entry.blobKey ?? '';
    const size = entry.size ?? 0;
    const etag = `"${hash}"`;
    // setHeader, not res.set(): the hot path needs no charset lookup (entries carry their own).
    res.setHeader('Content-Type', entry.contentType ?? 'application/octet-stream');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (status === 200) {
      res.setHeader('ETag', etag);
      res.setHeader('Accept-Ranges', 'bytes');
      // Paths can change content at any time; the ETag makes revalidation cheap.
      res.setHeader('Cache-Control', 'public, max-age=0, must-revalidate');
      if (etagMatches(req.get('if-none-match'), etag)) {
        res.status(304).end();
        return;
      }
    }

    let range: { start: number; end: number } | undefined;
    const rangeHeader = req.get('range');
    if (status === 200 && rangeHeader && size > 0 && ifRangeAllows(req.get('if-range'), etag)) {
      const parsed = rangeParser(size, rangeHeader, { combine: true });
      if (parsed === -1) {
        res.status(416).set('Content-Range', `bytes */${size}`).end();
        return;
      }
      if (parsed !== -2 && parsed.type === 'bytes' && parsed.length === 1 && parsed[0]) {
        range = { start: parsed[0].start, end: parsed[0].end };
      }
    }

    if (range) {
      res.status(206).set('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
      res.set('Content-Length', String(range.end - range.start + 1));
    } else {
      res.status(status).set('Content-Length', String(size));
    }
    if (req.method === 'HEAD') {
      res.end();
      return;
    }

    if (size <= this.maxCachedBlobBytes) {
      const bytes = await this.cachedBlob(hash);
      res.end(range ? bytes.subarray(range.start, range.end + 1) : bytes);
      return;
    }
    const object = await this.blobs.get(blobKeyForHash(hash), range);
    if (!object) throw new Error(`blob ${hash} is missing from the blob store`);
    object.body.on('error', () => res.destroy());
    res.on('close', () => object.body.destroy());
    object.body.pipe(res);
  }

  private async cachedBlob(hash: string): Promise<Buffer> {
    const cached = this.blobCache.get(hash);
    if (cached) {
      cacheEvents.blobHit.inc();
      return cached;
    }
    cacheEvents.blobMiss.inc();
    const bytes = await this.blobs.getBuffer(blobKeyForHash(hash));
    if (!bytes) throw new Error(`blob ${hash} is missing from the blob store`);
    this.blobCache.set(hash, bytes);
    return bytes;
  }
}

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;

/** A Host header's lower-cased hostname without port or trailing dot; undefined unless it is a DNS name. */
export function normalizeHost(hostHeader: string | undefined): string | undefined {
  if (!hostHeader || hostHeader.length > 300) return undefined;
  const hostname = hostHeader
    .replace(/:\d{1,5}$/, '')
    .replace(/\.$/, '')
    .toLowerCase();
  return HOSTNAME.test(hostname) ? hostname : undefined;
}

/** URL path → site path ('' for the root; trailing slash kept); undefined when it can name no file. */
export function decodeSitePath(urlPath: string): string | undefined {
  // Longer than any stored path can be (1024 bytes, percent-encoded at most 3 bytes a byte).
  if (urlPath.length > 3 * MAX_PATH_BYTES + 1) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(decoded)) return undefined;
  const relative = decoded.replace(/^\/+/, '').normalize('NFC');
  const segments = relative.split('/');
  if (segments.some((s, i) => s === '.' || s === '..' || (s === '' && i !== segments.length - 1)))
    return undefined;
  if (Buffer.byteLength(relative) > MAX_PATH_BYTES) return undefined;
  if (segments.some((s) => Buffer.byteLength(s) > MAX_SEGMENT_BYTES)) return undefined;
  return relative;
}

function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}

function ifRangeAllows(ifRange: string | undefined, etag: string): boolean {
  return ifRange === undefined || ifRange.trim() === etag;
}
