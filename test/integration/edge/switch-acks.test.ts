import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../../src/server/index.js';
import { CHANNELS, openStore, type Store } from '../../../src/store/index.js';
import { heldChannel } from '../../support/held-channel.js';
import { deployClient, type DeployClient } from '../../support/deploys-api.js';
import {
  metricValue,
  rawRequest,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

// Two replicas on one PostgreSQL and bucket, each with its path caches kept an hour: a switch
// returns once every live edge process acknowledged it (not after the sync window), and right
// after it returns both replicas serve the new version. A replica that does not answer sends the
// switch back to the window; a dead one's registration expires.
describe('acknowledged switches across replicas (postgres+s3)', () => {
  const peerNews = heldChannel(CHANNELS.site);
  let hp: TestHostplane;
  let peerStore: Store | undefined;
  let peer: RunningServer | undefined;
  let site: TestSite;
  let api: DeployClient;
  const host = 'acked.localhost:8080';
  const paths = ['/a.html', '/b.html', '/c.html'];
  const version = (v: string) => Object.fromEntries(paths.map((p) => [p.slice(1), `${v} ${p}`]));
  const edge = { cacheTtlMs: 60 * 60_000, leaseMs: 1500 };

  beforeAll(async () => {
    hp = await startHostplane('postgres+s3', { edge });
    site = await hp.createSite('acked');
    peerStore = await openStore({ databaseUrl: hp.config.databaseUrl });
    peer = await startServer(hp.config, {
      store: peerNews.wrap(peerStore),
      blobs: hp.services.blobs,
      logger: createLogger('silent'),
      adminSocket: false,
      worker: false,
      edge,
    });
    api = deployClient(hp.port, site.apiKey);
  });
  afterAll(async () => {
    peerNews.release();
    await peer?.close();
    await peerStore?.close();
    await hp?.stop();
  });

  const get = async (port: number, path: string) =>
    (await rawRequest(port, path, { headers: { host } })).text();
  const switches = async (outcome: 'acked' | 'fallback') =>
    metricValue(await scrapeMetrics(hp), 'hostplane_deploy_switch_wait_seconds_count', { outcome });
  const liveEdges = async () =>
    rowsOf<{ id: string }>(
      await hp.services.store.db.execute(sql`select id from edge_processes where lease_until > now()`),
    ).map((r) => r.id);
  const bothServe = async (v: string) => {
    for (let round = 0; round < 20; round++)
      for (const port of [hp.port, peer!.port])
        for (const p of paths) expect(await get(port, p)).toBe(`${v} ${p}`);
  };

  it('registers every edge process, and a switch returns on their acknowledgements', async () => {
    // Each registers as it starts (before that, it reads the database).
    await expect.poll(async () => (await liveEdges()).length).toBe(2);
    await api.deploy(version('v1'));
    await bothServe('v1');
    for (const v of ['v2', 'v3', 'v4']) {
      const [acked, fallback] = [await switches('acked'), await switches('fallback')];
      await api.deploy(version(v));
      // Right after it returns, both replicas (caches full of the old version) serve the new one.
      await bothServe(v);
      expect(await switches('acked')).toBe(acked + 1);
      expect(await switches('fallback')).toBe(fallback);
    }
  });

  it('a replica that stops acknowledging: the switch waits out the window, and is still seen by both', async () => {
    await bothServe('v4');
    const fallback = await switches('fallback');
    peerNews.hold();
    try {
      await api.deploy(version('v5'));
      expect(await switches('fallback')).toBe(fallback + 1);
      // The peer heard nothing (its notifications are held, its sync round trips too, so each
      // request waits for one to time out), yet serves the new version.
      for (const p of paths) expect(await get(peer!.port, p)).toBe(`v5 ${p}`);
    } finally {
      peerNews.release();
    }
    await bothServe('v5');
  });

  it("a dead process's registration expires and it is no longer waited for", async () => {
    // What a process killed without a goodbye leaves behind: a lease that runs out.
    await hp.services.store.db.execute(
      sql`insert into edge_processes (id, lease_until) values ('dead-process', now() + interval '1500 milliseconds')`,
    );
    const fallback = await switches('fallback');
    await api.deploy(version('v6'));
    expect(await switches('fallback')).toBe(fallback + 1);
    await bothServe('v6');
    await expect.poll(liveEdges, { timeout: 5000 }).not.toContain('dead-process');
    const acked = await switches('acked');
    await api.deploy(version('v7'));
    expect(await switches('acked')).toBe(acked + 1);
    await bothServe('v7');
  });

  it('a process that stops cleanly takes its registration with it before its store closes', async () => {
    const before = await liveEdges();
    const store = await openStore({ databaseUrl: hp.config.databaseUrl });
    const third = await startServer(hp.config, {
      store,
      blobs: hp.services.blobs,
      logger: createLogger('silent'),
      adminSocket: false,
      worker: false,
      edge,
    });
    await expect.poll(async () => (await liveEdges()).length).toBe(before.length + 1);
    await third.close();
    await store.close();
    // Gone at once, not when its lease runs out (until then every switch would wait the window).
    expect(await liveEdges()).toEqual(expect.arrayContaining(before));
    expect((await liveEdges()).length).toBe(before.length);
  });
});
