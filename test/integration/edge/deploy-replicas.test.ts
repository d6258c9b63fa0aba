import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../../src/server/index.js';
import { CHANNELS, openStore, type Store } from '../../../src/store/index.js';
import { heldChannel } from '../../support/held-channel.js';
import { deployClient, type DeployClient } from '../../support/deploys-api.js';
import { rawRequest, startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';

// Two replicas on one PostgreSQL and bucket, each with its own edge caches (kept an hour: only the
// NOTIFY and the sync window can make them let go). A switch made through one replica's API must be
// served by both once the call returns, and no replica may go back to the old version after it
// served the new one.
describe('deploy switches across replicas (postgres+s3)', () => {
  const news = heldChannel(CHANNELS.site);
  let hp: TestHostplane;
  let peerStore: Store | undefined;
  let peer: RunningServer | undefined;
  let site: TestSite;
  let api: DeployClient;
  let peerApi: DeployClient;
  const host = 'replicated.localhost:8080';
  const paths = ['/a.html', '/b.html', '/c.html'];
  const version = (v: string) => Object.fromEntries(paths.map((p) => [p.slice(1), `${v} ${p}`]));

  beforeAll(async () => {
    hp = await startHostplane('postgres+s3', { edge: { cacheTtlMs: 60 * 60_000 }, wrapStore: news.wrap });
    site = await hp.createSite('replicated');
    peerStore = await openStore({ databaseUrl: hp.config.databaseUrl });
    peer = await startServer(hp.config, {
      store: peerStore,
      blobs: hp.services.blobs,
      logger: createLogger('silent'),
      adminSocket: false,
      worker: false,
      edge: { cacheTtlMs: 60 * 60_000 },
    });
    api = deployClient(hp.port, site.apiKey);
    peerApi = deployClient(peer.port, site.apiKey);
  });
  afterAll(async () => {
    news.release();
    await peer?.close();
    await peerStore?.close();
    await hp?.stop();
  });

  const get = async (port: number, path: string) =>
    (await rawRequest(port, path, { headers: { host } })).text();

  it('serves the old or the new version, never the old after the new, and the new once publish returns', async () => {
    await api.deploy(version('v1'));
    const replicas = [hp.port, peer!.port];
    for (const port of replicas) for (const p of paths) expect(await get(port, p)).toBe(`v1 ${p}`);

    let returnedAt = Infinity;
    let stop = false;
    const seen: Array<Array<{ startedAt: number; body: string }>> = replicas.map(() => []);
    const readers = replicas.map(async (port, r) => {
      while (!stop) {
        for (const p of paths) {
          const startedAt = performance.now();
          seen[r]!.push({ startedAt, body: await get(port, p) });
        }
      }
    });
    const v2 = await peerApi.deploy(version('v2'));
    returnedAt = performance.now();
    // A few more rounds on each replica after the call returned.
    const after = seen.map((s) => s.length);
    while (seen.some((s, r) => s.length < after[r]! + 30)) await new Promise((r) => setTimeout(r, 20));
    stop = true;
    await Promise.all(readers);

    for (const requests of seen) {
      const versions = requests.map((q) => q.body.split(' ')[0]);
      const firstNew = versions.indexOf('v2');
      expect(firstNew).toBeGreaterThan(0);
      // Once new, never old again.
      expect(versions.slice(firstNew).every((v) => v === 'v2')).toBe(true);
      // Nothing but whole versions.
      expect(requests.every((q) => /^v[12] \/[abc]\.html$/.test(q.body))).toBe(true);
      // Every request started after the call returned saw the new version.
      expect(requests.filter((q) => q.startedAt > returnedAt).every((q) => q.body.startsWith('v2'))).toBe(
        true,
      );
    }
    expect((await api.call('GET', '/api/v1/deploys')).body.live_deploy_id).toBe(v2);
  });

  it('a restore is served by the other replica when it returns, even with its NOTIFY held back', async () => {
    const list = await api.call('GET', '/api/v1/deploys');
    const deploys = list.body.deploys as Array<{ id: string; live: boolean }>;
    const earlier = deploys.find((d) => !d.live)!.id;
    // hp serves the live version from its cache, then hears nothing more.
    for (const p of paths) expect(await get(hp.port, p)).toBe(`v2 ${p}`);
    news.hold();
    try {
      const restored = await peerApi.call('POST', `/api/v1/deploys/${earlier}/restore`);
      expect(restored.status).toBe(200);
      for (const p of paths) expect(await get(hp.port, p)).toBe(`v1 ${p}`);
    } finally {
      news.release();
    }
    for (const p of paths) expect(await get(peer!.port, p)).toBe(`v1 ${p}`);
  });
});
