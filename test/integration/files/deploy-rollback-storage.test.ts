import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { startServer, type RunningServer } from '../../../src/server/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { call } from '../../support/account-api.js';
import { deployClient, sha256, type DeployClient } from '../../support/deploys-api.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { withFreeLimits } from '../../support/plans.js';

// Issue 28, "storage outside the quota": deploys kept for rollback may hold, beyond the live
// deploy, at most the plan's storage limit of distinct bytes; retention prunes the oldest first.
describe.each(backends)('storage kept for rollback (%s)', (backend) => {
  let hp: TestHostplane;
  const tag = backend === 'postgres+s3' ? 'pg' : 'pgl';
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  const kept = async (api: DeployClient) =>
    ((await api.call('GET', '/api/v1/deploys?per_page=100')).body.deploys as Array<{ id: string }>).map(
      (d) => d.id,
    );
  const rollbackOf = async (apiKey: string) => {
    const res = await hp.request('/api/v1/files/storage-limits', { headers: { 'x-api-key': apiKey } });
    return ((await res.json()) as { rollback: Record<string, unknown> }).rollback;
  };

  it('cannot pin more than the plan’s storage with many distinct versions (free)', async () => {
    await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
      const site = await hp.createSite(`rb-many-${tag}`);
      const api = deployClient(hp.port, site.apiKey);
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push(await api.deploy({ 'index.html': `${i}`.repeat(600) }));
      // The live one, and the one before it (600 B of its own); 1,200 B would pass the bound.
      expect((await kept(api)).sort()).toEqual(ids.slice(-2).sort());
      expect(await rollbackOf(site.apiKey)).toMatchObject({
        current: 600,
        limit: 1000,
        current_formatted: '600 B',
        deploys: 1,
      });
      const { token } = await hp.services.platform.createSession(site.email);
      const me = await call(hp, 'GET', '/api/v1/account', { headers: { authorization: `Bearer ${token}` } });
      expect(me.body.usage.sites).toEqual([
        expect.objectContaining({ slug: `rb-many-${tag}`, rollback_bytes: { used: 600, limit: 1000 } }),
      ]);
      // The pruned versions' blobs go to the orphan sweep.
      await hp.services.files.sweepOrphanBlobs(0);
      expect(await hp.services.blobs.head(`blobs/${sha256('0'.repeat(600))}`)).toBeFalsy();
      expect(await hp.services.blobs.head(`blobs/${sha256('4'.repeat(600))}`)).toBeTruthy();
    });
  });

  it('counts a blob once, and not at all when the live deploy has it', async () => {
    await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
      const site = await hp.createSite(`rb-shared-${tag}`);
      const api = deployClient(hp.port, site.apiKey);
      const shared = 'S'.repeat(450);
      const v = (c: string) => ({ 'index.html': shared, [`${c}.html`]: c.repeat(100) });
      const x = await api.deploy(v('b'));
      const y = await api.deploy(v('c'));
      const z = await api.deploy({ 'index.html': 'z'.repeat(100) });
      // Live z; y holds S and c (550 B), x adds b only (S counted once): 650 B.
      expect((await kept(api)).sort()).toEqual([x, y, z].sort());
      expect(await rollbackOf(site.apiKey)).toMatchObject({ current: 650, deploys: 2 });
      // Live w has S: not counted at all.
      const w = await api.deploy(v('e'));
      expect(await rollbackOf(site.apiKey)).toMatchObject({ current: 300, deploys: 3 });
      const big = await api.deploy({ 'index.html': 'V'.repeat(900) });
      expect(await rollbackOf(site.apiKey)).toMatchObject({ current: 850, deploys: 4 });
      // 900 B of the previous version, then w would add 550 B: everything older goes.
      const bigger = await api.deploy({ 'index.html': 'W'.repeat(900) });
      expect((await kept(api)).sort()).toEqual([big, bigger].sort());
      expect(await rollbackOf(site.apiKey)).toMatchObject({ current: 900, deploys: 1 });
      expect((await api.call('GET', `/api/v1/deploys/${w}`)).status).toBe(404);
      // A restore keeps the bound too.
      expect((await api.call('POST', `/api/v1/deploys/${big}/restore`)).status).toBe(200);
      expect(await rollbackOf(site.apiKey)).toMatchObject({ current: 900, deploys: 1 });
    });
  });

  // Switches through two replicas at once: PostgreSQL (the site lock) keeps the bound.
  if (backend === 'postgres+s3')
    it('holds the bound when replicas finalize at the same time', async () => {
      let peerStore: Store | undefined;
      let peer: RunningServer | undefined;
      try {
        peerStore = await openStore({ databaseUrl: hp.config.databaseUrl });
        peer = await startServer(hp.config, {
          store: peerStore,
          blobs: hp.services.blobs,
          logger: createLogger('silent'),
          adminSocket: false,
          worker: false,
        });
        // Room for eight unfinished deploys at once; the bound is 1,000 B when they switch.
        await withFreeLimits({ maxStorageBytes: 4000 }, async () => {
          const site = await hp.createSite(`rb-race-${tag}`);
          const apis = [deployClient(hp.port, site.apiKey), deployClient(peer!.port, site.apiKey)];
          const ready: string[] = [];
          for (let i = 0; i < 8; i++) {
            const content = `${i}`.repeat(400);
            const { id } = await apis[0]!.create({ 'index.html': sha256(content) });
            expect((await apis[0]!.put(id, sha256(content), content)).status).toBe(200);
            ready.push(id);
          }
          await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
            const answers = await Promise.all(
              ready.map((id, i) => apis[i % 2]!.call('POST', `/api/v1/deploys/${id}/finalize`)),
            );
            expect(answers.map((a) => a.status)).toEqual(ready.map(() => 200));
            // The live one + at most 1,000 B of others (400 B each): two.
            expect(await kept(apis[0]!)).toHaveLength(3);
            expect(await rollbackOf(site.apiKey)).toMatchObject({ current: 800, deploys: 2 });
          });
        });
      } finally {
        await peer?.close();
        await peerStore?.close();
      }
    });
});
