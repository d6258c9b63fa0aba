import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_ID_ANNOTATION, SiteResources } from '../../../src/kube/client.js';
import { startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';
import { ensureNamespace, installCrds } from '../../support/kube/apply.js';
import { chartCrds } from '../../support/kube/helm.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { call, invitedOwner } from '../../support/account-api.js';
import { eventually } from '../../support/eventually.js';

// Cluster mode: a site made from the account API gets its Site resource like one made by
// `hostplane admin create-site`; its custom domains and its deletion go through that resource.
const namespace = 'hostplane';

describe('the account API in cluster mode (a real kube-apiserver)', () => {
  let env: KubeTestEnv;
  let hp: TestHostplane;
  let sites: SiteResources;
  const previousKubeconfig = process.env.KUBECONFIG;
  beforeAll(async () => {
    env = await startKubeTestEnv();
    await installCrds(env, await chartCrds());
    await ensureNamespace(env, namespace);
    sites = new SiteResources(env.kubeConfig(), namespace, 'test');
    // The server's clients read the kubeconfig from the environment, as in a pod.
    process.env.KUBECONFIG = env.kubeconfigPath;
    hp = await startHostplane('postgres+s3', {
      kubeConfig: env.kubeConfig(),
      env: {
        HOSTPLANE_KUBERNETES: 'true',
        HOSTPLANE_NAMESPACE: namespace,
        HOSTPLANE_DOMAIN_VERIFICATION: 'off',
      },
    });
  }, 120_000);
  afterAll(async () => {
    await hp?.stop();
    await env?.stop();
    if (previousKubeconfig === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = previousKubeconfig;
  });

  it('creates the Site resource, writes custom domains to it and deletes the site through it', async () => {
    const owner = await invitedOwner(hp, 'cluster-owner@example.com');
    const created = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: 'from-console' },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    const siteId = created.body.site.id as number;
    const resource = await sites.get('from-console');
    expect(resource?.metadata.annotations?.[SITE_ID_ANNOTATION]).toBe(String(siteId));
    expect(resource?.spec).toMatchObject({ slug: 'from-console', deletionPolicy: 'Retain' });

    // The controller claims the site for its resource (no controller runs here: claimed by hand).
    expect(await hp.services.platform.claimSite(siteId, resource!.metadata.uid!, () => false)).toBe(
      'claimed',
    );
    const attached = await call(hp, 'POST', `/api/v1/account/sites/${siteId}/domains`, {
      json: { hostname: 'www.console.example' },
      headers: owner.bearer,
    });
    expect(attached.status).toBe(201);
    expect((await sites.get('from-console'))?.spec.customDomains).toEqual(['www.console.example']);

    const deleted = await call(hp, 'DELETE', `/api/v1/account/sites/${siteId}`, { headers: owner.bearer });
    expect(deleted.status).toBe(200);
    // Without a controller (no finalizer) the resource goes at once; with one, its finalizer
    // removes forms, databases and the site (deletionPolicy Delete, set just before).
    await eventually(
      'the Site resource is gone',
      async () => (await sites.get('from-console')) === undefined,
    );
  });

  it('finds a Site resource the controller has not claimed yet (domains, deletion)', async () => {
    const owner = await invitedOwner(hp, 'cluster-unclaimed@example.com');
    const created = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: 'not-claimed-yet' },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    const siteId = created.body.site.id as number;
    expect((await hp.services.platform.siteRouting(siteId))?.resourceUid).toBeNull();

    // Written to the resource's spec: the controller's claim then keeps it (it mirrors the spec).
    const attached = await call(hp, 'POST', `/api/v1/account/sites/${siteId}/domains`, {
      json: { hostname: 'www.unclaimed.example' },
      headers: owner.bearer,
    });
    expect(attached.status).toBe(201);
    expect((await sites.get('not-claimed-yet'))?.spec.customDomains).toEqual(['www.unclaimed.example']);

    // Deleted with its resource: nothing is left for the controller to adopt as a new site.
    const deleted = await call(hp, 'DELETE', `/api/v1/account/sites/${siteId}`, { headers: owner.bearer });
    expect(deleted.status).toBe(200);
    expect(await sites.get('not-claimed-yet')).toBeUndefined();
    expect(await hp.services.platform.getSite(siteId)).toBeUndefined();
  });
});
