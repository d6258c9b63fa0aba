import { CustomObjectsApi, type V1Ingress } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiStatus } from '../../../src/kube/client.js';
import { registry } from '../../../src/observability/index.js';
import type { SiteResource, SiteSpec } from '../../../src/kube/index.js';
import type { RunningController } from '../../../src/server/index.js';
import {
  eventually,
  startClusterFixture,
  updateSiteSpec,
  type ClusterFixture,
} from '../../support/kube/cluster.js';
import {
  certificateKind as cm,
  setCertificateStatus as writeCertificateStatus,
} from '../../support/kube/cert-manager.js';
import { certManagerCrds } from '../../support/kube/external-crds.js';
import { installChartRbac, installCrds } from '../../support/kube/apply.js';

// The Site controller's certificates against a real kube-apiserver with cert-manager's own
// Certificate CRD. The test plays cert-manager: it writes the Certificates' status.

const ISSUER = { kind: 'ClusterIssuer' as const, name: 'pebble' };
const WILDCARD = 'sites-wildcard-tls';

let fx: ClusterFixture;
let controller: RunningController;
let custom: CustomObjectsApi;

interface Certificate {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string }[];
  };
  spec: {
    secretName: string;
    dnsNames: string[];
    issuerRef: { kind: string; name: string; group?: string };
  };
  status?: Record<string, unknown>;
}

beforeAll(async () => {
  fx = await startClusterFixture('hp-certs');
  // The chart's own Role, with an issuer: every test also proves those permissions are enough.
  const rbac = await installChartRbac(fx.env, fx.namespace, {
    sites: { tls: { issuer: ISSUER, wildcardSecret: WILDCARD } },
  });
  custom = fx.env.kubeConfig().makeApiClient(CustomObjectsApi);
  // cert-manager's CRD is not installed yet: the first tests see the controller without it.
  controller = await fx.startController({
    token: rbac.controllerToken,
    kubernetes: { tls: { issuer: ISSUER, wildcardSecret: WILDCARD } },
  });
}, 180_000);

afterAll(async () => {
  await fx?.stop();
});

const applySite = (name: string, spec: Partial<SiteSpec> & { slug: string }) =>
  fx.sites.create({ metadata: { name }, spec: spec as SiteSpec });

const updateSpec = (name: string, change: (spec: SiteSpec) => SiteSpec) => updateSiteSpec(fx, name, change);

const siteWhere = (name: string, what: string, test: (site: SiteResource) => boolean) =>
  eventually(`Site ${name}: ${what}`, async () => {
    const site = await fx.sites.get(name);
    return site && site.status?.observedGeneration === site.metadata.generation && test(site)
      ? site
      : undefined;
  });

const conditionOf = (site: SiteResource, type: string) =>
  site.status?.conditions?.find((c) => c.type === type);
const domainOf = (site: SiteResource, host: string) => site.status?.domains?.find((d) => d.hostname === host);

async function certificates(site: string): Promise<Certificate[]> {
  const list = (await custom.listNamespacedCustomObject({
    ...cm,
    namespace: fx.namespace,
    labelSelector: `hostplane.dev/site=${site}`,
  })) as { items: Certificate[] };
  return list.items;
}

async function ingressOf(name: string): Promise<V1Ingress> {
  return fx.networking.readNamespacedIngress({ name: `site-${name}`, namespace: fx.namespace });
}

/** cert-manager's part: writes the Certificate's status conditions. */
const setCertificateStatus = (name: string, status: Record<string, unknown>) =>
  writeCertificateStatus(custom, fx.namespace, name, status);

async function events(site: string, reason: string): Promise<string[]> {
  const list = await fx.core.listNamespacedEvent({
    namespace: fx.namespace,
    fieldSelector: `involvedObject.name=${site},reason=${reason}`,
  });
  return list.items.map((e) => e.message ?? '');
}

async function secretExists(name: string): Promise<boolean> {
  try {
    await fx.core.readNamespacedSecret({ name, namespace: fx.namespace });
    return true;
  } catch (err) {
    if (apiStatus(err) === 404) return false;
    throw err;
  }
}

/** hostplane_site_certificates by state, from the controller's registry (same process). */
async function certificateGauge(): Promise<Record<string, number>> {
  const metric = await registry.getSingleMetric('hostplane_site_certificates')?.get();
  return Object.fromEntries((metric?.values ?? []).map((v) => [String(v.labels.state), v.value]));
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

describe('without cert-manager’s CRD', () => {
  it('routes the Site all the same and says why there is no certificate (CertificatesReady CertManagerMissing)', async () => {
    await applySite('early', { slug: 'early', customDomains: ['early.example.net'] });
    const site = await siteWhere('early', 'CertificatesReady False', (s) =>
      Boolean(conditionOf(s, 'CertificatesReady')),
    );
    expect(conditionOf(site, 'Ready')?.status).toBe('True');
    expect(conditionOf(site, 'CertificatesReady')).toMatchObject({
      status: 'False',
      reason: 'CertManagerMissing',
    });
    expect(conditionOf(site, 'CertificatesReady')?.message).toContain('cert-manager');
    // The slug host still has the wildcard Secret; no tls entry names a Secret nobody will fill.
    const ingress = await ingressOf('early');
    expect(ingress.spec?.tls).toEqual([{ hosts: ['early.localhost'], secretName: WILDCARD }]);
  });

  it('once the CRD is installed, the Site gets its Certificate (the controller did not crash or stall)', async () => {
    await installCrds(fx.env, await certManagerCrds());
    await eventually(
      'a Certificate for early.example.net',
      async () => (await certificates('early')).length === 1,
    );
    await siteWhere(
      'early',
      'CertificatesReady Pending',
      (s) => conditionOf(s, 'CertificatesReady')?.reason === 'CertificatePending',
    );
  });
});

describe('a Site with a verified custom domain', () => {
  let certificate: Certificate;

  beforeAll(async () => {
    await installCrds(fx.env, await certManagerCrds());
    await applySite('shop', { slug: 'shop', customDomains: ['shop.example.com'] });
    await eventually('the Certificate of shop.example.com', async () => {
      [certificate] = (await certificates('shop')) as [Certificate];
      return certificate;
    });
    // The Certificate is applied before the route, so its Ingress may come a moment later.
    await eventually('the Ingress of shop', () => ingressOf('shop').catch(() => undefined));
  });

  it('gets one Certificate from the configured issuer, owned by the Site, with a Secret of its own', async () => {
    expect(await certificates('shop')).toHaveLength(1);
    expect(certificate.spec.dnsNames).toEqual(['shop.example.com']);
    expect(certificate.spec.issuerRef).toMatchObject(ISSUER);
    expect(certificate.spec.secretName).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(certificate.metadata.name.length).toBeLessThanOrEqual(63);
    expect(certificate.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('hostplane-controller');
    expect(certificate.metadata.ownerReferences).toMatchObject([{ kind: 'Site', name: 'shop' }]);
  });

  it('is on the Ingress once issued: until then no tls entry names its empty Secret (wildcard Secret for the slug host), no cert-manager annotation', async () => {
    // Traefik, for one, drops a whole Ingress whose tls names a Secret that does not exist.
    const ingress = await ingressOf('shop');
    expect(ingress.spec?.rules?.map((r) => r.host)).toEqual(['shop.localhost', 'shop.example.com']);
    expect(ingress.spec?.tls).toEqual([{ hosts: ['shop.localhost'], secretName: WILDCARD }]);
    expect(
      Object.keys(ingress.metadata?.annotations ?? {}).filter((k) => k.startsWith('cert-manager.io')),
    ).toEqual([]);
  });

  it('reports Pending, then Ready when cert-manager marks it Ready, with one CertificateIssued Event', async () => {
    const pending = await siteWhere(
      'shop',
      'certificate Pending',
      (s) => domainOf(s, 'shop.example.com')?.certificate?.state === 'Pending',
    );
    expect(conditionOf(pending, 'CertificatesReady')).toMatchObject({
      status: 'False',
      reason: 'CertificatePending',
    });
    expect(pending.status?.url).toMatch(/^https:\/\/shop\.localhost\b/);

    await setCertificateStatus(certificate.metadata.name, {
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Ready',
          message: 'Certificate is up to date and has not expired',
          lastTransitionTime: now(),
        },
      ],
      notAfter: '2027-02-26T07:00:00Z',
    });
    const ready = await siteWhere(
      'shop',
      'certificate Ready',
      (s) => domainOf(s, 'shop.example.com')?.certificate?.state === 'Ready',
    );
    expect(domainOf(ready, 'shop.example.com')?.certificate).toMatchObject({
      state: 'Ready',
      name: certificate.metadata.name,
      secretName: certificate.spec.secretName,
      notAfter: '2027-02-26T07:00:00Z',
    });
    expect(conditionOf(ready, 'CertificatesReady')).toMatchObject({
      status: 'True',
      reason: 'CertificatesIssued',
    });
    // Issued: its Secret is on the Ingress.
    await eventually('the tls entry of shop.example.com', async () => {
      const tls = (await ingressOf('shop')).spec?.tls ?? [];
      return (
        JSON.stringify(tls) ===
        JSON.stringify([
          { hosts: ['shop.localhost'], secretName: WILDCARD },
          { hosts: ['shop.example.com'], secretName: certificate.spec.secretName },
        ])
      );
    });
    // early.example.net is still being issued.
    expect(await certificateGauge()).toEqual({ ready: 1, pending: 1, failed: 0 });
    await eventually(
      'the CertificateIssued Event',
      async () => (await events('shop', 'CertificateIssued')).length === 1,
    );
    // A resync with nothing new records nothing more.
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    expect(await events('shop', 'CertificateIssued')).toHaveLength(1);
  });

  it('reports Failed with cert-manager’s reason and message, with one CertificateFailed Event', async () => {
    await setCertificateStatus(certificate.metadata.name, {
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Expired',
          message: 'Certificate expired',
          lastTransitionTime: now(),
        },
        {
          type: 'Issuing',
          status: 'False',
          reason: 'Failed',
          message:
            'The certificate request has failed to complete and will be retried: acme: urn:ietf:params:acme:error:connection',
          lastTransitionTime: now(),
        },
      ],
      lastFailureTime: now(),
    });
    const failed = await siteWhere(
      'shop',
      'certificate Failed',
      (s) => domainOf(s, 'shop.example.com')?.certificate?.state === 'Failed',
    );
    expect(domainOf(failed, 'shop.example.com')?.certificate).toMatchObject({ reason: 'Failed' });
    expect(domainOf(failed, 'shop.example.com')?.certificate?.message).toContain('acme:error:connection');
    expect(conditionOf(failed, 'CertificatesReady')).toMatchObject({
      status: 'False',
      reason: 'CertificateFailed',
    });
    expect(conditionOf(failed, 'CertificatesReady')?.message).toContain('shop.example.com');
    // Routing is not held back by a certificate: Ready stays True.
    expect(conditionOf(failed, 'Ready')?.status).toBe('True');
    expect(await certificateGauge()).toEqual({ ready: 0, pending: 1, failed: 1 });
    await eventually(
      'the CertificateFailed Event',
      async () => (await events('shop', 'CertificateFailed')).length === 1,
    );
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    expect(await events('shop', 'CertificateFailed')).toHaveLength(1);
  });

  it('a removed domain loses its Certificate, its Secret and its route', async () => {
    const secretName = certificate.spec.secretName;
    // cert-manager's Secret, as it would have written it.
    await fx.core.createNamespacedSecret({
      namespace: fx.namespace,
      body: {
        metadata: { name: secretName },
        type: 'kubernetes.io/tls',
        stringData: { 'tls.crt': '', 'tls.key': '' },
      },
    });
    await updateSpec('shop', (spec) => ({ ...spec, customDomains: [] }));
    await eventually('the Certificate gone', async () => (await certificates('shop')).length === 0);
    await eventually('its Secret gone', async () => !(await secretExists(secretName)));
    const ingress = await ingressOf('shop');
    expect(ingress.spec?.rules?.map((r) => r.host)).toEqual(['shop.localhost']);
    expect(ingress.spec?.tls).toEqual([{ hosts: ['shop.localhost'], secretName: WILDCARD }]);
    const site = await siteWhere('shop', 'no domains', (s) => (s.status?.domains ?? []).length === 0);
    expect(conditionOf(site, 'CertificatesReady')).toBeUndefined();
  });
});

describe('Sites without custom domains', () => {
  it('get no Certificate: the wildcard Secret serves their slug host', async () => {
    await applySite('plain', { slug: 'plain' });
    const site = await siteWhere('plain', 'Ready', (s) => conditionOf(s, 'Ready')?.status === 'True');
    expect(await certificates('plain')).toEqual([]);
    expect(conditionOf(site, 'CertificatesReady')).toBeUndefined();
    expect(site.status?.url).toMatch(/^https:\/\/plain\.localhost\b/);
    expect((await ingressOf('plain')).spec?.tls).toEqual([
      { hosts: ['plain.localhost'], secretName: WILDCARD },
    ]);
  });
});

describe('a deleted Site', () => {
  it('takes its Certificates and their Secrets with it', async () => {
    await applySite('gone', { slug: 'gone', customDomains: ['gone.example.org', 'www.gone.example.org'] });
    await eventually('two Certificates', async () => (await certificates('gone')).length === 2);
    const secretNames = (await certificates('gone')).map((c) => c.spec.secretName);
    for (const name of secretNames) {
      await fx.core.createNamespacedSecret({
        namespace: fx.namespace,
        body: { metadata: { name }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': '', 'tls.key': '' } },
      });
    }
    await fx.sites.delete('gone');
    await eventually('the Site gone', async () => (await fx.sites.get('gone')) === undefined);
    expect(await certificates('gone')).toEqual([]);
    for (const name of secretNames) expect(await secretExists(name)).toBe(false);
  });
});
