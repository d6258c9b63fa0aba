import { describe, expect, it } from 'vitest';
import type { BlobStore } from '../../../src/blob/index.js';
import type { Config } from '../../../src/config/index.js';
import { EdgeCache } from '../../../src/edge/cache.js';
import type { DeploysService, FilesService } from '../../../src/files/index.js';
import type { Platform, SiteEventHandlers, SiteEvents } from '../../../src/platform/index.js';

const config = {
  baseUrl: 'http://localhost:8080',
  sitesDomain: 'localhost:8080',
  edge: { cacheBytes: 1 << 20, syncWindowMs: undefined, compression: false },
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
    roundTrip: () => {
      const d = deferred<boolean>();
      trips.push(d);
      return d.promise;
    },
  } as unknown as SiteEvents;
  const cache = new EdgeCache(config, {} as Platform, files, {} as DeploysService, {} as BlobStore, events, {
    syncWindowMs,
  });
  return { cache, lookups, trips, handlers: () => handlers! };
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
