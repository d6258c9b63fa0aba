import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BlobStore } from '../../../src/blob/index.js';
import type { Config } from '../../../src/config/index.js';
import { EdgeCache } from '../../../src/edge/cache.js';
import type { DeploysService, FilesService } from '../../../src/files/index.js';
import type { Platform, SiteEventHandlers, SiteEvents } from '../../../src/platform/index.js';

const config = {
  baseUrl: 'http://localhost:8080',
  sitesDomain: 'localhost:8080',
  edge: {
    cacheBytes: 1 << 20,
    syncWindowMs: undefined,
    compression: false,
    diskCache: { dir: '/nonexistent', maxBytes: 0 },
  },
} as unknown as Config;

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}
const deferred = <T>(): Deferred<T> => {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
};

const row = (path: string, hash: string) => ({
  path,
  kind: 'file' as const,
  blobKey: hash,
  size: 1,
  contentType: 'text/html',
  updatedAt: new Date(0),
});

/** An EdgeCache on fakes: the database lookups and the sync round trips are the test's to answer. */
function fakeEdge(syncWindowMs: number | null) {
  let handlers: SiteEventHandlers | undefined;
  /** Whether this process's lease runs; `regained` is what the edge does when it renews late. */
  const lease = { holds: true, regained: undefined as (() => void) | undefined };
  const lookups: Array<Deferred<ReturnType<typeof row>[]>> = [];
  const trips: Array<Deferred<boolean>> = [];
  const files = {
    findAll: () => {
      const d = deferred<ReturnType<typeof row>[]>();
      lookups.push(d);
      return d.promise;
    },
  } as unknown as FilesService;
  const events = {
    subscribe: (h: SiteEventHandlers) => {
      handlers = h;
      return () => undefined;
    },
    // Registered as a live edge process, with a lease that always runs.
    register: (_leaseMs: number, onRegained: () => void) => {
      lease.regained = onRegained;
      return { holds: () => lease.holds };
    },
    unregister: async () => undefined,
    roundTrip: () => {
      const d = deferred<boolean>();
      trips.push(d);
      return d.promise;
    },
  } as unknown as SiteEvents;
  const cache = new EdgeCache(config, {} as Platform, files, {} as DeploysService, {} as BlobStore, events, {
    syncWindowMs,
  });
  return { cache, lookups, trips, lease, handlers: () => handlers! };
}

describe('edge cache and missed notifications', () => {
  it('never caches what a lookup in flight across a missed-events flush read', async () => {
    const { cache, lookups, handlers } = fakeEdge(null);
    const site = { id: 1 };
    const pending = cache.resolve(site, '/a.html');
    await expect.poll(() => lookups.length).toBe(1);
    // The LISTEN connection was lost and came back: changes may have been missed meanwhile.
    handlers().missed();
    lookups[0]!.resolve([row('a.html', 'old')]);
    expect(await pending).toMatchObject({ type: 'file' });
    expect(cache.cachedResolution(site, '/a.html')).toBeUndefined();
    void cache.resolve(site, '/a.html');
    await expect.poll(() => lookups.length).toBe(2);
    cache.close();
  });
});

describe('edge cache while the sync loop is behind', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const warm = async (edge: ReturnType<typeof fakeEdge>, site: { id: number }) => {
    edge.trips[0]!.resolve(true);
    const warming = edge.cache.resolve(site, '/a.html');
    await vi.waitFor(() => expect(edge.lookups).toHaveLength(1));
    edge.lookups[0]!.resolve([row('a.html', 'v1')]);
    await warming;
    // PostgreSQL becomes slow: the loop's next round trips stay in flight past the window.
    await vi.advanceTimersByTimeAsync(200);
    expect(edge.cache.cachedResolution(site, '/a.html')).toBeUndefined();
  };

  it('makes stale requests wait on one shared round trip, then answers from the caches', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const edge = fakeEdge(50);
    const site = { id: 1 };
    await warm(edge, site);
    const tripsBefore = edge.trips.length;
    const requests = Array.from({ length: 10 }, () => edge.cache.resolve(site, '/a.html'));
    await vi.waitFor(() => expect(edge.trips.length).toBe(tripsBefore + 1));
    edge.trips.at(-1)!.resolve(true);
    const answers = await Promise.all(requests);
    expect(answers.every((a) => a.type === 'file')).toBe(true);
    // No request went to the database: one round trip answered for all ten.
    expect(edge.lookups).toHaveLength(1);
    edge.cache.close();
  });

  it('goes to the database when the shared round trip fails', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const edge = fakeEdge(50);
    const site = { id: 1 };
    await warm(edge, site);
    const tripsBefore = edge.trips.length;
    const requests = Array.from({ length: 3 }, () => edge.cache.resolve(site, '/a.html'));
    await vi.waitFor(() => expect(edge.trips.length).toBe(tripsBefore + 1));
    edge.trips.at(-1)!.resolve(false);
    await vi.waitFor(() => expect(edge.lookups.length).toBeGreaterThan(1));
    for (const l of edge.lookups.slice(1)) l.resolve([row('a.html', 'v2')]);
    for (const a of await Promise.all(requests))
      expect(a).toMatchObject({ type: 'file', entry: { hash: 'v2' } });
    edge.cache.close();
  });
});

describe('edge cache and its registration lease', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers from the caches only while its lease runs, and drops them when it renews after a lapse', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const edge = fakeEdge(60_000);
    const site = { id: 1 };
    edge.trips[0]!.resolve(true);
    const warming = edge.cache.resolve(site, '/a.html');
    await vi.waitFor(() => expect(edge.lookups).toHaveLength(1));
    edge.lookups[0]!.resolve([row('a.html', 'v1')]);
    await warming;
    expect(edge.cache.cachedResolution(site, '/a.html')).toBeDefined();
    // The lease lapsed (a switch no longer waits for this process): the database answers.
    edge.lease.holds = false;
    expect(edge.cache.cachedResolution(site, '/a.html')).toBeUndefined();
    const during = edge.cache.resolve(site, '/a.html');
    await vi.waitFor(() => expect(edge.lookups).toHaveLength(2));
    edge.lookups[1]!.resolve([row('a.html', 'v2')]);
    expect(await during).toMatchObject({ entry: { hash: 'v2' } });
    // Renewed: what the caches held from before (v1, perhaps switched away unheard) is gone.
    edge.lease.holds = true;
    edge.lease.regained!();
    expect(edge.cache.cachedResolution(site, '/a.html')).toBeUndefined();
    edge.cache.close();
  });
});
