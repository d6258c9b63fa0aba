import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../../src/server/index.js';
import { openStore, type Store } from '../../../src/store/db.js';
import { siteFiles } from '../../../src/files/tables.js';
import { eventually } from '../../support/eventually.js';
import {
  startHostplane,
  upload,
  uploadTo,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

// Cross-process invalidation: the edge under test (`hp`) caches pages; every change it must notice
// is made by a second instance (`peer`) with its own connection pool and its own in-process
// events, on the same PostgreSQL and bucket. Only NOTIFY can tell the edge. Its cache TTL (the
// safety net for missed notifications) is set far beyond any wait here, so it cannot help either.
describe('edge invalidation by Postgres NOTIFY', () => {
  let hp: TestHostplane;
  let peerStore: Store | undefined;
  let peer: RunningServer | undefined;
  let site: TestSite;
  const host = 'notified.localhost:8080';
  /** Bytes to repoint a page at silently: two files whose contents no test page ever has. */
  const sources = { 'b.html': 'two', 'c.html': 'three' } as const;

  beforeAll(async () => {
    hp = await startHostplane('postgres+s3', { edge: { cacheTtlMs: 60 * 60_000 } });
    site = await hp.createSite('notified');
    for (const [sitePath, content] of Object.entries(sources)) await upload(hp, site, sitePath, content);
    await upload(hp, site, 'a.html', 'one');
    await upload(hp, site, 'r.html', 'one');
    peerStore = await openStore({ databaseUrl: hp.config.databaseUrl });
    peer = await startServer(hp.config, {
      role: 'api',
      store: peerStore,
      blobs: hp.services.blobs,
      logger: createLogger('silent'),
      adminSocket: false,
      worker: false,
    });
  });
  afterAll(async () => {
    await peer?.close();
    await peerStore?.close();
    await hp?.stop();
  });

  const page = async (sitePath: string) => (await hp.request(`/${sitePath}`, { host })).text();

  const servedEventually = (sitePath: string, expected: string) =>
    eventually(`${sitePath} to be served as "${expected}"`, async () => (await page(sitePath)) === expected);

  /** An upload through the peer's public API: the write commits there and NOTIFY is all `hp` hears. */
  async function uploadThroughPeer(sitePath: string, content: string): Promise<void> {
    await uploadTo(peer!.port, site, sitePath, content);
  }

  /** Points `sitePath` at another file's bytes in the database, with no NOTIFY at all. */
  async function repointSilently(sitePath: string, sourcePath: string): Promise<void> {
    const { db } = hp.services.store;
    const [source] = await db
      .select()
      .from(siteFiles)
      .where(and(eq(siteFiles.siteId, site.siteId), eq(siteFiles.path, sourcePath)));
    await db
      .update(siteFiles)
      .set({ blobKey: source!.blobKey, size: source!.size })
      .where(and(eq(siteFiles.siteId, site.siteId), eq(siteFiles.path, sitePath)));
  }

  /**
   * Waits until `hp` serves `sitePath` from its cache: it answers the same after the row was
   * silently pointed at other bytes. Returns what it serves and what the database now holds, which
   * it shows only once something invalidates the entry. (Retried because a notification of an
   * earlier write may still arrive and drop the entry in between.)
   */
  function servedFromCache(sitePath: string): Promise<{ cached: string; underneath: string }> {
    return eventually(`${sitePath} to be served from the cache`, async () => {
      const cached = await page(sitePath);
      const source = cached === sources['b.html'] ? 'c.html' : 'b.html';
      await repointSilently(sitePath, source);
      return (await page(sitePath)) === cached && { cached, underneath: sources[source] };
    });
  }

  it('drops a cached page when another instance changes it', async () => {
    await servedFromCache('a.html');
    await uploadThroughPeer('a.html', 'changed by the peer');
    await servedEventually('a.html', 'changed by the peer');
  });

  it('survives the loss of its LISTEN connection and subscribes again', async () => {
    const { underneath } = await servedFromCache('r.html');

    const { db } = hp.services.store;
    const killed = await db.execute(
      sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'LISTEN%'`,
    );
    expect((killed as unknown as { rowCount: number }).rowCount).toBeGreaterThan(0);
    expect((await hp.request('/readyz')).status).toBe(200);

    // What changed while nobody listened shows up through the flush that follows a successful
    // re-subscription (notifications sent meanwhile are lost): the new LISTEN is in place.
    await servedEventually('r.html', underneath);

    // Cached again, with nothing pending that would drop it: from here only a notification can.
    await servedFromCache('r.html');
    await uploadThroughPeer('r.html', 'after the reconnect');
    await servedEventually('r.html', 'after the reconnect');
  });
});
