import { KubernetesObjectApi, type V1Ingress } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_FINALIZER, SITE_ID_ANNOTATION, apiStatus } from '../../../src/kube/client.js';
import { API_VERSION, type SiteResource, type SiteSpec } from '../../../src/kube/index.js';
import type { RunningController } from '../../../src/server/index.js';
import {
  EDGE_SERVICE,
  eventually,
  startClusterFixture,
  updateSiteSpec,
  type ClusterFixture,
} from '../../support/kube/cluster.js';
import { installChartRbac } from '../../support/kube/apply.js';
import { upload, type TestSite } from '../../support/hostplane.js';

let fx: ClusterFixture;
let controller: RunningController;

beforeAll(async () => {
  fx = await startClusterFixture();
  // The controller runs as the chart's own ServiceAccount, bound by the chart's own Role: every
  // test below then also proves those permissions are enough.
  const rbac = await installChartRbac(fx.env, fx.namespace);
  controller = await fx.startController({ token: rbac.controllerToken });
}, 120_000);

afterAll(async () => {
  await fx?.stop();
});

const ready = (site: SiteResource | undefined) =>
  site?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') &&
  site.status.observedGeneration === site.metadata.generation
    ? site
    : undefined;

async function applySite(name: string, spec: Partial<SiteSpec> & { slug: string }): Promise<SiteResource> {
  return fx.sites.create({ metadata: { name }, spec: spec as SiteSpec });
}

const updateSpec = (name: string, change: (spec: SiteSpec) => SiteSpec) => updateSiteSpec(fx, name, change);

async function updateLabels(name: string, labels: Record<string, string>): Promise<void> {
  for (;;) {
    const site = await fx.sites.get(name);
    if (!site) throw new Error(`no Site ${name}`);
    try {
      await fx.sites.replace({
        ...site,
        metadata: { ...site.metadata, labels: { ...site.metadata.labels, ...labels } },
      });
      return;
    } catch (err) {
      if (apiStatus(err) !== 409) throw err;
    }
  }
}

const waitReady = (name: string, timeoutMs?: number) =>
  eventually(`Site ${name} to be Ready`, async () => ready(await fx.sites.get(name)), timeoutMs);

async function ingressOf(name: string): Promise<V1Ingress | undefined> {
  try {
    return await fx.networking.readNamespacedIngress({ name: `site-${name}`, namespace: fx.namespace });
  } catch (err) {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  }
}

const hostsOf = (ingress: V1Ingress | undefined) => (ingress?.spec?.rules ?? []).map((r) => r.host).sort();

/** The adopted site's key, from the Secret the controller wrote. */
async function adoptedKey(site: SiteResource): Promise<string> {
  const secretName = site.status?.apiKeySecretName;
  if (!secretName) throw new Error('no apiKeySecretName in status');
  const secret = await fx.core.readNamespacedSecret({ name: secretName, namespace: fx.namespace });
  return Buffer.from(secret.data?.apiKey ?? '', 'base64').toString('utf8');
}

async function serve(host: string, path = '/'): Promise<{ status: number; body: string }> {
  const res = await fx.hostplane.request(path, { host });
  return { status: res.status, body: await res.text() };
}

const testSite = (site: SiteResource, apiKey: string): TestSite => ({
  siteId: site.status?.siteId ?? 0,
  accountId: 0,
  slug: site.spec.slug,
  apiKey,
  email: '',
});

describe('the Site CRD', () => {
  it('rejects a slug that is not a DNS label and applies the default deletion policy', async () => {
    await expect(applySite('bad-slug', { slug: 'Not_A_Label' })).rejects.toSatisfy(
      (err) => apiStatus(err) === 422,
    );
    const created = await applySite('defaults', { slug: 'defaults' });
    expect(created.spec.deletionPolicy).toBe('Retain');
  });

  it('rejects an upper-case custom domain and an unknown deletion policy', async () => {
    await expect(
      applySite('bad-domain', { slug: 'bad-domain', customDomains: ['WWW.Example.com'] }),
    ).rejects.toSatisfy((err) => apiStatus(err) === 422);
    await expect(
      applySite('bad-policy', { slug: 'bad-policy', deletionPolicy: 'Forever' as 'Retain' }),
    ).rejects.toSatisfy((err) => apiStatus(err) === 422);
  });
});

describe('a Site applied with kubectl', () => {
  let site: SiteResource;
  let apiKey: string;

  beforeAll(async () => {
    await applySite('blog', { slug: 'blog' });
    site = await waitReady('blog');
    apiKey = await adoptedKey(site);
    await upload(fx.hostplane, testSite(site, apiKey), 'index.html', '<h1>blog home</h1>');
  });

  it('is adopted: a database site, a finalizer, the id annotation and a working API key in a Secret', async () => {
    expect(site.metadata.finalizers).toContain(SITE_FINALIZER);
    const siteId = Number(site.metadata.annotations?.[SITE_ID_ANNOTATION]);
    expect(site.status?.siteId).toBe(siteId);
    const dbSite = await fx.hostplane.services.platform.getSite(siteId);
    expect(dbSite?.slug).toBe('blog');
    expect(site.status?.url).toBe('http://blog.localhost:8080');
    const principal = await fx.hostplane.services.platform.authenticateKey(apiKey);
    expect(principal?.siteId).toBe(siteId);
  });

  it('gets one Ingress with its host, owned by the Site and pointing at the edge Service', async () => {
    const ingress = await ingressOf('blog');
    expect(hostsOf(ingress)).toEqual(['blog.localhost']);
    expect(ingress?.spec?.ingressClassName).toBe('nginx');
    expect(ingress?.spec?.tls).toBeUndefined();
    const backend = ingress?.spec?.rules?.[0]?.http?.paths[0]?.backend.service;
    expect(backend).toEqual({ name: EDGE_SERVICE.name, port: { number: EDGE_SERVICE.port } });
    expect(ingress?.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Site', name: 'blog', uid: site.metadata.uid, controller: true }),
    ]);
    expect(site.status?.ingressName).toBe('site-blog');
  });

  it('is served by the edge at its subdomain', async () => {
    expect(await serve('blog.localhost:8080')).toEqual({ status: 200, body: '<h1>blog home</h1>' });
  });

  it('follows custom domains added and removed: Ingress, database and edge', async () => {
    await updateSpec('blog', (spec) => ({ ...spec, customDomains: ['www.blog.example', 'blog.example'] }));
    await eventually('the Ingress to carry both domains', async () => {
      const hosts = hostsOf(await ingressOf('blog'));
      return hosts.length === 3 ? hosts : undefined;
    });
    expect(hostsOf(await ingressOf('blog'))).toEqual(['blog.example', 'blog.localhost', 'www.blog.example']);
    await eventually(
      'the edge to serve www.blog.example',
      async () => (await serve('www.blog.example')).status === 200,
    );
    const updated = await waitReady('blog');
    expect(updated.status?.domains).toEqual(
      expect.arrayContaining([
        { hostname: 'www.blog.example', ready: true },
        { hostname: 'blog.example', ready: true },
      ]),
    );

    await updateSpec('blog', (spec) => ({ ...spec, customDomains: ['blog.example'] }));
    await eventually('the Ingress to drop www', async () => hostsOf(await ingressOf('blog')).length === 2);
    await eventually(
      'the edge to stop serving www',
      async () => (await serve('www.blog.example')).status === 404,
    );
    expect((await serve('blog.example')).status).toBe(200);
    const siteId = site.status?.siteId ?? 0;
    expect((await fx.hostplane.services.platform.siteRouting(siteId))?.customDomains).toEqual([
      'blog.example',
    ]);
  });

  it('reports a custom domain another site holds as not ready, and does not take it', async () => {
    await applySite('thief', { slug: 'thief', customDomains: ['blog.example'] });
    const thief = await eventually('the thief to report the conflict', async () => {
      const s = await fx.sites.get('thief');
      return s?.status?.domains?.length ? s : undefined;
    });
    expect(thief.status?.domains).toEqual([
      expect.objectContaining({ hostname: 'blog.example', ready: false, reason: 'DomainTaken' }),
    ]);
    expect(thief.status?.conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      reason: 'DomainTaken',
    });
    expect(hostsOf(await ingressOf('thief'))).toEqual(['thief.localhost']);
    expect((await serve('blog.example')).body).toBe('<h1>blog home</h1>');
  });

  it('follows a slug rename', async () => {
    await updateSpec('blog', (spec) => ({ ...spec, slug: 'journal' }));
    await eventually('the Ingress to use the new slug', async () =>
      hostsOf(await ingressOf('blog')).includes('journal.localhost'),
    );
    expect(hostsOf(await ingressOf('blog'))).not.toContain('blog.localhost');
    await eventually(
      'the edge to serve the new host',
      async () => (await serve('journal.localhost:8080')).status === 200,
    );
    await eventually('the old host to stop', async () => (await serve('blog.localhost:8080')).status === 404);
    const renamed = await waitReady('blog');
    expect(renamed.status?.url).toBe('http://journal.localhost:8080');
  });

  it('spec.tls names the issuer of its Certificates: without cert-manager’s CRD, CertificatesReady says so (no ingress-shim annotation)', async () => {
    await updateSpec('blog', (spec) => ({
      ...spec,
      tls: { issuerName: 'letsencrypt', issuerKind: 'ClusterIssuer' },
    }));
    const certificatesReady = (site: SiteResource | undefined) =>
      site?.status?.observedGeneration === site?.metadata.generation
        ? site?.status?.conditions?.find((c) => c.type === 'CertificatesReady')
        : undefined;
    const missing = await eventually('CertificatesReady', async () =>
      certificatesReady(await fx.sites.get('blog')),
    );
    expect(missing).toMatchObject({ status: 'False', reason: 'CertManagerMissing' });
    // Routed all the same, over HTTP: no tls entry names a Secret nobody will fill.
    const ingress = await ingressOf('blog');
    expect(ingress?.metadata?.annotations?.['cert-manager.io/cluster-issuer']).toBeUndefined();
    expect(ingress?.spec?.tls).toBeUndefined();
    expect((await waitReady('blog')).status?.url).toBe('http://journal.localhost:8080');

    await updateSpec('blog', (spec) => ({ ...spec, tls: undefined }));
    await eventually('CertificatesReady to go', async () => {
      const site = await fx.sites.get('blog');
      return site?.status?.observedGeneration === site?.metadata.generation && !certificatesReady(site);
    });
  });

  it('puts its Ingress back when someone edits it', async () => {
    const ingress = await ingressOf('blog');
    if (!ingress) throw new Error('no Ingress site-blog');
    const hosts = hostsOf(ingress);
    await fx.networking.replaceNamespacedIngress({
      name: 'site-blog',
      namespace: fx.namespace,
      body: { ...ingress, spec: { ...ingress.spec, rules: [{ host: 'hijacked.example' }] } },
    });
    expect(hostsOf(await ingressOf('blog'))).toEqual(['hijacked.example']);
    await eventually('the Ingress to be put back', async () => {
      const now = hostsOf(await ingressOf('blog'));
      return now.join() === hosts.join() ? now : undefined;
    });
  });

  it('recreates its Ingress when someone deletes it', async () => {
    await fx.networking.deleteNamespacedIngress({ name: 'site-blog', namespace: fx.namespace });
    await eventually('the Ingress to come back', async () => ingressOf('blog'));
  });
});

describe('deleting a Site', () => {
  it('with Retain removes routing only: the site and its files stay, and a new Site with the slug re-attaches it', async () => {
    await applySite('keep', { slug: 'keep', customDomains: ['keep.example'] });
    const site = await waitReady('keep');
    const apiKey = await adoptedKey(site);
    await upload(fx.hostplane, testSite(site, apiKey), 'index.html', 'kept');
    await eventually('the edge to serve keep', async () => (await serve('keep.example')).status === 200);

    await fx.sites.delete('keep');
    await eventually('the Site to be gone', async () => !(await fx.sites.get('keep')));
    expect(await ingressOf('keep')).toBeUndefined();
    const siteId = site.status?.siteId ?? 0;
    const routing = await fx.hostplane.services.platform.siteRouting(siteId);
    expect(routing).toMatchObject({ detached: true, customDomains: [] });
    await eventually(
      'the edge to stop serving keep',
      async () => (await serve('keep.localhost:8080')).status === 404,
    );
    expect((await serve('keep.example')).status).toBe(404);
    // Files and keys are kept.
    expect(await fx.hostplane.services.files.find(siteId, 'index.html')).toBeDefined();
    expect((await fx.hostplane.services.platform.authenticateKey(apiKey))?.siteId).toBe(siteId);
    // The resync does not resurrect a detached site's resource: a whole pass that started after
    // the detach (it creates resources for database sites that have none) leaves it alone.
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    expect((await fx.sites.list()).map((s) => s.spec.slug)).not.toContain('keep');

    await applySite('keep-again', { slug: 'keep' });
    const again = await waitReady('keep-again');
    expect(again.status?.siteId).toBe(siteId);
    await eventually(
      'the edge to serve keep again',
      async () => (await serve('keep.localhost:8080')).body === 'kept',
    );
  });

  it('with Delete removes the Forms naming it, then the site, its files index and its key Secret', async () => {
    await applySite('gone', { slug: 'gone', deletionPolicy: 'Delete' });
    const site = await waitReady('gone');
    const forms = KubernetesObjectApi.makeApiClient(fx.env.kubeConfig());
    const form = (name: string, siteName: string) => ({
      apiVersion: API_VERSION,
      kind: 'Form',
      metadata: { name, namespace: fx.namespace },
      spec: { siteRef: { name: siteName }, name: 'Contact' },
    });
    await forms.create(form('gone-contact', 'gone'));
    await forms.create(form('other-contact', 'blog'));
    const apiKey = await adoptedKey(site);
    await upload(fx.hostplane, testSite(site, apiKey), 'index.html', 'soon gone');
    const siteId = site.status?.siteId ?? 0;

    await fx.sites.delete('gone');
    await eventually('the Site to be gone', async () => !(await fx.sites.get('gone')));
    expect(await ingressOf('gone')).toBeUndefined();
    expect(await fx.hostplane.services.platform.getSite(siteId)).toBeUndefined();
    expect(await fx.hostplane.services.files.find(siteId, 'index.html')).toBeUndefined();
    expect(await fx.hostplane.services.platform.authenticateKey(apiKey)).toBeUndefined();
    await expect(
      fx.core.readNamespacedSecret({ name: 'site-gone-api-key', namespace: fx.namespace }),
    ).rejects.toSatisfy((err) => apiStatus(err) === 404);
    await eventually(
      'the edge to stop serving gone',
      async () => (await serve('gone.localhost:8080')).status === 404,
    );
  });
});

describe('what a Site may not take', () => {
  it('a copied site-id annotation: refused, and deleting the copy (even with Delete) leaves the site alone', async () => {
    await applySite('original', { slug: 'original' });
    const original = await waitReady('original');
    const siteId = original.status?.siteId ?? 0;
    await fx.sites.create({
      metadata: { name: 'copy', annotations: { [SITE_ID_ANNOTATION]: String(siteId) } },
      spec: { slug: 'hijacked', customDomains: ['hijack.example'], deletionPolicy: 'Delete' },
    });
    const copy = await eventually('the copy to be refused', async () => {
      const s = await fx.sites.get('copy');
      return s?.status?.conditions?.[0]?.reason === 'SiteClaimed' ? s : undefined;
    });
    expect(copy.status?.conditions?.[0]?.status).toBe('False');
    expect(await ingressOf('copy')).toBeUndefined();
    expect(await fx.hostplane.services.platform.siteRouting(siteId)).toMatchObject({
      slug: 'original',
      customDomains: [],
    });

    await fx.sites.delete('copy');
    await eventually('the copy to be gone', async () => !(await fx.sites.get('copy')));
    expect(await fx.hostplane.services.platform.getSite(siteId)).toBeDefined();
    expect(hostsOf(await ingressOf('original'))).toEqual(['original.localhost']);
  });

  it('a name longer than 63 characters is rejected by the CRD', async () => {
    await expect(applySite('n'.repeat(64), { slug: 'long-name' })).rejects.toSatisfy(
      (err) => apiStatus(err) === 422,
    );
  });

  it("the platform's own hosts are rejected as custom domains", async () => {
    await applySite('greedy', { slug: 'greedy', customDomains: ['other.localhost', 'greedy.example'] });
    const greedy = await eventually('the rejection', async () => {
      const s = await fx.sites.get('greedy');
      return s?.status?.domains?.length === 2 ? s : undefined;
    });
    expect(greedy.status?.domains).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ hostname: 'other.localhost', ready: false, reason: 'DomainRejected' }),
        { hostname: 'greedy.example', ready: true },
      ]),
    );
    expect(hostsOf(await ingressOf('greedy'))).toEqual(['greedy.example', 'greedy.localhost']);
  });

  it('an Ingress it does not control is neither taken over nor deleted', async () => {
    await fx.networking.createNamespacedIngress({
      namespace: fx.namespace,
      body: {
        metadata: { name: 'site-squatter' },
        spec: { rules: [{ host: 'someone-else.example' }] },
      },
    });
    await applySite('squatter', { slug: 'squatter' });
    await eventually('the conflict', async () => {
      const s = await fx.sites.get('squatter');
      return s?.status?.conditions?.[0]?.reason === 'IngressConflict';
    });
    expect(hostsOf(await ingressOf('squatter'))).toEqual(['someone-else.example']);
    await fx.sites.delete('squatter');
    await eventually('the Site to be gone', async () => !(await fx.sites.get('squatter')));
    expect(hostsOf(await ingressOf('squatter'))).toEqual(['someone-else.example']);
  });
});

describe('two ways in, one state', () => {
  it('a database site without a Site resource gets one from the resync, linked not adopted', async () => {
    const created = await fx.hostplane.createSite('from-api');
    const resource = await waitReady('from-api');
    expect(resource.metadata.annotations?.[SITE_ID_ANNOTATION]).toBe(String(created.siteId));
    expect(resource.status?.siteId).toBe(created.siteId);
    expect(resource.status?.apiKeySecretName).toBeUndefined();
    expect(hostsOf(await ingressOf('from-api'))).toEqual(['from-api.localhost']);
  });
});

describe('concurrent writers', () => {
  it('converge: the controller and another writer both land their changes (409s are retried)', async () => {
    await applySite('busy', { slug: 'busy' });
    // Another writer keeps changing the Site while the controller reconciles it: status writes
    // carry the resourceVersion they read, so some answer 409 and are retried from fresh state.
    for (let i = 0; i < 10; i++) {
      await updateLabels('busy', { touch: String(i) });
    }
    const site = await waitReady('busy');
    expect(site.metadata.labels?.touch).toBe('9');
  });
});

describe('restarting the API server', () => {
  it('loses nothing: watches recover and changes made around the restart are reconciled', async () => {
    await applySite('before-restart', { slug: 'before-restart' });
    await waitReady('before-restart');
    await fx.env.restartApiServer();
    await applySite('after-restart', { slug: 'after-restart' });
    await updateSpec('before-restart', (spec) => ({ ...spec, customDomains: ['restart.example'] }));
    await waitReady('after-restart', 60_000);
    await eventually(
      'the domain added after the restart to reach the Ingress',
      async () => hostsOf(await ingressOf('before-restart')).includes('restart.example'),
      60_000,
    );
    expect(controller.manager.isLeader()).toBe(true);
  }, 90_000);
});
