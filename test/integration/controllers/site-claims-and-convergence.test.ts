import { describe, expect, it } from 'vitest';
import { SITE_ID_ANNOTATION, apiStatus } from '../../../src/kube/client.js';
import { eventually } from '../../support/kube/cluster.js';
import {
  applySite,
  controller,
  fx,
  hostsOf,
  ingressOf,
  updateSpec,
  useSiteCluster,
  waitReady,
} from './site-support.js';

// What a Site may not claim (another site's id, an over-long name, the platform's own hosts, an
// Ingress it does not control), and one state however it is reached: a database site linked by the
// resync, the controller and another writer both landing their changes, an API server restart.

useSiteCluster();

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
