import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningController } from '../../../src/server/index.js';
import { call, invitedOwner } from '../../support/account-api.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';
import { startHeldKubeProxy, type HeldKubeProxy } from '../../support/kube/held-proxy.js';
import { installChartRbac } from '../../support/kube/apply.js';

// Cluster mode: the Site resource's spec.customDomains is what the controller mirrors into the
// database (deleting any domain it does not list). The api writes each change into it; two api
// calls at once (two replicas), or a controller pass in the middle of one, must not lose a
// domain the owner was told is attached. The api's calls to the API server go through a proxy
// that holds one of them back, so the interleavings are forced, not hoped for.
describe('custom domains changed concurrently in cluster mode (a real kube-apiserver)', () => {
  let fx: ClusterFixture;
  let api: TestHostplane;
  let proxy: HeldKubeProxy;
  let dir: string;
  let controllerToken: string;
  const previousKubeconfig = process.env.KUBECONFIG;
  beforeAll(async () => {
    fx = await startClusterFixture();
    const rbac = await installChartRbac(fx.env, fx.namespace);
    controllerToken = rbac.controllerToken;
    dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-domain-race-'));
    proxy = await startHeldKubeProxy(fx.env, rbac.apiToken, dir);
    // The api's Site client reads the kubeconfig from the environment, as in a pod.
    process.env.KUBECONFIG = proxy.kubeconfigPath;
    api = await startHostplane('postgres+s3', {
      env: {
        DATABASE_URL: fx.hostplane.config.databaseUrl,
        HOSTPLANE_KUBERNETES: 'true',
        HOSTPLANE_NAMESPACE: fx.namespace,
        HOSTPLANE_POD_NAME: 'api-0',
        HOSTPLANE_DOMAIN_VERIFICATION: 'off',
      },
      kubeConfig: fx.env.kubeConfig(rbac.apiToken),
    });
  }, 180_000);
  afterAll(async () => {
    proxy?.release();
    await api?.stop();
    await proxy?.close();
    await fx?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (previousKubeconfig === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = previousKubeconfig;
  });

  const platform = () => fx.hostplane.services.platform;
  const specDomains = async (name: string) =>
    [...((await fx.sites.get(name))?.spec.customDomains ?? [])].sort();
  const databaseDomains = async (siteId: number) => (await platform().domains.hostnames(siteId)).sort();
  /** What a Site controller pass does to the database: route exactly the spec's domains. */
  const controllerPass = async (name: string, siteId: number) => {
    const spec = (await fx.sites.get(name))!.spec;
    await platform().applyRouting(siteId, spec.slug, spec.customDomains ?? []);
  };
  const holdSitePatch = (name: string) =>
    proxy.holdNext(
      (r) => r.method === 'PATCH' && new URL(r.path, 'http://x').pathname.endsWith(`/sites/${name}`),
    );
  const newSite = async (slug: string) => {
    const owner = await invitedOwner(api, `${slug}@example.com`);
    const created = await call(api, 'POST', '/api/v1/account/sites', {
      json: { slug },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    const siteId = created.body.site.id as number;
    const attach = (hostname: string) =>
      call(api, 'POST', `/api/v1/account/sites/${siteId}/domains`, {
        json: { hostname },
        headers: owner.bearer,
      });
    const detach = (hostname: string) =>
      call(api, 'DELETE', `/api/v1/account/sites/${siteId}/domains/${hostname}`, { headers: owner.bearer });
    return { siteId, attach, detach };
  };

  // Runs first: no controller is running yet, the test makes the pass itself at the chosen moment.
  it('keeps a domain whose attach races a controller pass', async () => {
    const { siteId, attach } = await newSite('race-pass');
    const resource = await fx.sites.get('race-pass');
    expect(await platform().claimSite(siteId, resource!.metadata.uid!, () => false)).toBe('claimed');

    holdSitePatch('race-pass');
    const attaching = attach('www.pass.example');
    await proxy.held();
    // A controller pass while the api's write to the Site resource is in flight.
    await controllerPass('race-pass', siteId);
    proxy.release();
    expect((await attaching).status).toBe(201);

    // The owner was told it is attached: it serves now, and after the next pass.
    expect(await databaseDomains(siteId)).toEqual(['www.pass.example']);
    await controllerPass('race-pass', siteId);
    expect(await specDomains('race-pass')).toEqual(['www.pass.example']);
    expect(await databaseDomains(siteId)).toEqual(['www.pass.example']);
  });

  it('attaches a domain while a controller pass inserts the same one, without a deadlock', async () => {
    const { siteId, attach } = await newSite('race-lock');
    // A controller pass as applyRouting makes it: the site row locked, then the spec's domains
    // inserted. The attach arrives between the two.
    const pass = new pg.Client({ connectionString: fx.hostplane.config.databaseUrl });
    await pass.connect();
    try {
      await pass.query('begin');
      await pass.query('select id from sites where id = $1 for update', [siteId]);
      const attaching = attach('www.lock.example');
      await eventually('the attach to wait for a lock', async () => {
        // Read afresh each time: within a transaction pg_stat_activity is one snapshot.
        await pass.query('select pg_stat_clear_snapshot()');
        const { rows } = await pass.query(
          `select 1 from pg_stat_activity
            where datname = current_database() and pid <> pg_backend_pid() and wait_event_type = 'Lock'`,
        );
        return rows.length > 0;
      });
      await pass.query(
        'insert into custom_domains (hostname, site_id) values ($1, $2) on conflict do nothing',
        ['www.lock.example', siteId],
      );
      await pass.query('commit');
      expect((await attaching).status).toBe(201);
    } finally {
      await pass.end();
    }
    expect(await databaseDomains(siteId)).toEqual(['www.lock.example']);
  });

  it('takes a domain out of the spec again when another site attached it meanwhile', async () => {
    const first = await newSite('race-taken-a');
    const second = await newSite('race-taken-b');

    // The first site's write to its resource is slow; the second site attaches the name meanwhile.
    holdSitePatch('race-taken-a');
    const attaching = first.attach('www.taken.example');
    await proxy.held();
    expect((await second.attach('www.taken.example')).status).toBe(201);
    proxy.release();
    const refused = await attaching;
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('DOMAIN_TAKEN');

    // The name stays where the database put it: not left in the loser's spec.
    expect(await specDomains('race-taken-a')).toEqual([]);
    expect(await specDomains('race-taken-b')).toEqual(['www.taken.example']);
    expect(await databaseDomains(first.siteId)).toEqual([]);
    expect(await databaseDomains(second.siteId)).toEqual(['www.taken.example']);
  });

  describe('with the controller running', () => {
    let controller: RunningController;
    beforeAll(async () => {
      controller = await fx.startController({ token: controllerToken });
    });
    afterAll(async () => {
      await controller?.close();
    });
    const reconciled = (name: string) =>
      eventually(`the controller to reconcile Site ${name}'s latest spec`, async () => {
        const s = await fx.sites.get(name);
        return s?.metadata.generation !== undefined && s.status?.observedGeneration === s.metadata.generation;
      });

    it('keeps both of two domains attached at once on two replicas, in the spec and the database', async () => {
      const { siteId, attach } = await newSite('race-two');
      await reconciled('race-two');

      // The first call's write to the resource is slow; the second call runs from start to end meanwhile.
      holdSitePatch('race-two');
      const first = attach('www.one.example');
      await proxy.held();
      expect((await attach('www.two.example')).status).toBe(201);
      proxy.release();
      expect((await first).status).toBe(201);

      const both = ['www.one.example', 'www.two.example'];
      expect(await specDomains('race-two')).toEqual(both);
      await reconciled('race-two');
      expect(await databaseDomains(siteId)).toEqual(both);
    });

    it('detaches one domain while another is attached at once, without losing or reviving either', async () => {
      const { siteId, attach, detach } = await newSite('race-detach');
      expect((await attach('www.old.example')).status).toBe(201);
      await reconciled('race-detach');

      holdSitePatch('race-detach');
      const detaching = detach('www.old.example');
      await proxy.held();
      expect((await attach('www.new.example')).status).toBe(201);
      proxy.release();
      expect((await detaching).status).toBe(200);

      expect(await specDomains('race-detach')).toEqual(['www.new.example']);
      await reconciled('race-detach');
      expect(await databaseDomains(siteId)).toEqual(['www.new.example']);
    });
  });
});
