import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiStatus } from '../../../src/kube/client.js';
import type { SiteResource, SiteSpec } from '../../../src/kube/index.js';
import {
  EDGE_SERVICE,
  eventually,
  startClusterFixture,
  updateSiteSpec,
  type ClusterFixture,
} from '../../support/kube/cluster.js';
import {
  certificateKind as cm,
  issuedStatus,
  setCertificateStatus,
} from '../../support/kube/cert-manager.js';
import { certManagerCrds, gatewayApiCrds } from '../../support/kube/external-crds.js';
import { applyOrThrow, installChartRbac, installCrds } from '../../support/kube/apply.js';
import { renderChart } from '../../support/kube/helm.js';

// routing.mode=gateway against a real kube-apiserver with the Gateway API's own CRDs: the chart's
// Gateway is applied for real, the controller (as the chart's ServiceAccount) gives every Site an
// HTTPRoute and every verified custom domain an HTTPS listener on that Gateway with its certificate.

const ISSUER = { kind: 'ClusterIssuer' as const, name: 'pebble' };
const WILDCARD = 'sites-wildcard-tls';
const GATEWAY = 'hostplane-sites';
const gw = { group: 'gateway.networking.k8s.io', version: 'v1' };

let fx: ClusterFixture;
let custom: CustomObjectsApi;

interface Listener {
  name: string;
  hostname?: string;
  port: number;
  protocol: string;
  tls?: { certificateRefs?: { name: string }[] };
}
interface Gateway {
  metadata: { managedFields?: { manager?: string }[] };
  spec: { listeners: Listener[] };
}
interface HttpRoute {
  metadata: { ownerReferences?: { kind: string; name: string }[] };
  spec: {
    hostnames: string[];
    parentRefs: { name: string; namespace?: string; sectionName?: string }[];
    rules: { backendRefs: { name: string; port: number }[] }[];
  };
}

beforeAll(async () => {
  fx = await startClusterFixture('hp-gateway');
  await installCrds(fx.env, [...(await gatewayApiCrds()), ...(await certManagerCrds())]);
  const values = {
    routing: { mode: 'gateway' },
    gateway: { className: 'traefik' },
    sites: { tls: { issuer: ISSUER, wildcardSecret: WILDCARD } },
  };
  // The chart's Gateway and redirect route, applied for real (the CRDs validate them).
  const rendered = await renderChart({ namespace: fx.namespace, values });
  await applyOrThrow(
    fx.env,
    rendered.filter((o) => o.apiVersion?.startsWith('gateway.networking.k8s.io/')),
  );
  const rbac = await installChartRbac(fx.env, fx.namespace, values);
  custom = fx.env.kubeConfig().makeApiClient(CustomObjectsApi);
  await fx.startController({
    token: rbac.controllerToken,
    kubernetes: {
      tls: { issuer: ISSUER, wildcardSecret: WILDCARD },
      routing: {
        mode: 'gateway',
        parentRef: { name: GATEWAY, namespace: fx.namespace, sectionName: 'https' },
        listeners: { httpsPort: 443 },
      },
    },
  });
}, 180_000);

afterAll(async () => {
  await fx?.stop();
});

const applySite = (name: string, spec: Partial<SiteSpec> & { slug: string }) =>
  fx.sites.create({ metadata: { name }, spec: spec as SiteSpec });

const updateSpec = (name: string, change: (spec: SiteSpec) => SiteSpec) => updateSiteSpec(fx, name, change);

const gateway = async (): Promise<Gateway> =>
  (await custom.getNamespacedCustomObject({
    ...gw,
    plural: 'gateways',
    namespace: fx.namespace,
    name: GATEWAY,
  })) as Gateway;

/** The Site's HTTPRoute, or (plain) the one of its hosts still served over HTTP. */
async function routeOf(site: string, plain = false): Promise<HttpRoute | undefined> {
  try {
    return (await custom.getNamespacedCustomObject({
      ...gw,
      plural: 'httproutes',
      namespace: fx.namespace,
      name: plain ? `http-site-${site}` : `site-${site}`,
    })) as HttpRoute;
  } catch (err) {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  }
}

async function certificateSecrets(site: string): Promise<Map<string, string>> {
  const list = (await custom.listNamespacedCustomObject({
    ...cm,
    namespace: fx.namespace,
    labelSelector: `hostplane.dev/site=${site}`,
  })) as { items: { spec: { dnsNames: string[]; secretName: string } }[] };
  return new Map(list.items.map((c) => [c.spec.dnsNames[0]!, c.spec.secretName]));
}

async function certificateNames(site: string): Promise<string[]> {
  const list = (await custom.listNamespacedCustomObject({
    ...cm,
    namespace: fx.namespace,
    labelSelector: `hostplane.dev/site=${site}`,
  })) as { items: { metadata: { name: string } }[] };
  return list.items.map((c) => c.metadata.name);
}

/** cert-manager's part: the Certificate is issued (Ready). */
const markIssued = (name: string) => setCertificateStatus(custom, fx.namespace, name, issuedStatus());

const domainListeners = async () =>
  (await gateway()).spec.listeners.filter((l) => l.name.startsWith('domain-'));

const readySite = (name: string) =>
  eventually(`Site ${name} Ready`, async () => {
    const site = await fx.sites.get(name);
    return site?.status?.observedGeneration === site?.metadata.generation &&
      site?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
      ? (site as SiteResource)
      : undefined;
  });

describe('routing.mode=gateway', () => {
  it('a Site without custom domains gets an HTTPRoute on the https listener, no Ingress, and no Gateway listener', async () => {
    await applySite('docs', { slug: 'docs' });
    const site = await readySite('docs');
    expect(site.status?.httpRouteName).toBe('site-docs');
    const route = await routeOf('docs');
    expect(route?.spec.hostnames).toEqual(['docs.localhost']);
    expect(route?.spec.parentRefs).toMatchObject([
      { name: GATEWAY, namespace: fx.namespace, sectionName: 'https' },
    ]);
    expect(route?.spec.rules[0]?.backendRefs).toMatchObject([
      { name: EDGE_SERVICE.name, port: EDGE_SERVICE.port },
    ]);
    expect(route?.metadata.ownerReferences).toMatchObject([{ kind: 'Site', name: 'docs' }]);
    const ingresses = await fx.networking.listNamespacedIngress({ namespace: fx.namespace });
    expect(ingresses.items).toEqual([]);
    expect(await domainListeners()).toEqual([]);
    expect((await gateway()).metadata.managedFields?.map((f) => f.manager)).not.toContain(
      'hostplane-controller-site-docs',
    );
  });

  it('a verified custom domain gets its own HTTPS listener with its certificate once issued, and the route attaches to it', async () => {
    await applySite('shop', { slug: 'shop', customDomains: ['shop.example.com'] });
    // Not before its certificate is issued: a listener naming a missing Secret is invalid.
    const [name] = await eventually('the Certificate of shop.example.com', async () => {
      const names = await certificateNames('shop');
      return names.length === 1 ? names : undefined;
    });
    expect(await domainListeners()).toEqual([]);
    // Meanwhile it is served over HTTP (HTTP is otherwise redirected to the wildcard listener,
    // which does not cover it): a route of its own on the http listener.
    const plain = await eventually('the plain HTTP route', () => routeOf('shop', true));
    expect(plain.spec.hostnames).toEqual(['shop.example.com']);
    expect(plain.spec.parentRefs).toMatchObject([
      { name: GATEWAY, namespace: fx.namespace, sectionName: 'http' },
    ]);
    expect(plain.spec.rules[0]?.backendRefs).toMatchObject([
      { name: EDGE_SERVICE.name, port: EDGE_SERVICE.port },
    ]);
    await markIssued(name!);
    const listener = await eventually('the listener of shop.example.com', async () =>
      (await domainListeners()).find((l) => l.hostname === 'shop.example.com'),
    );
    // Issued: HTTPS only (the redirect answers HTTP), no plain route left.
    await eventually('the plain HTTP route gone', async () => (await routeOf('shop', true)) === undefined);
    const secrets = await certificateSecrets('shop');
    expect(listener).toMatchObject({
      port: 443,
      protocol: 'HTTPS',
      tls: { certificateRefs: [{ name: secrets.get('shop.example.com') }] },
    });
    // The chart's own listeners are untouched.
    expect((await gateway()).spec.listeners.map((l) => l.name)).toEqual(
      expect.arrayContaining(['http', 'https', listener.name]),
    );
    const route = await eventually('the route on the listener', async () => {
      const found = await routeOf('shop');
      return found?.spec.parentRefs.length === 2 ? found : undefined;
    });
    expect(route.spec.hostnames).toEqual(['shop.localhost', 'shop.example.com']);
    expect(route.spec.parentRefs.map((p) => p.sectionName)).toEqual(['https', listener.name]);
  });

  it('two Sites keep their own listeners; a removed domain takes its listener, route host and Certificate', async () => {
    await applySite('blog', { slug: 'blog', customDomains: ['blog.example.org'] });
    const [name] = await eventually('the Certificate of blog.example.org', async () => {
      const names = await certificateNames('blog');
      return names.length === 1 ? names : undefined;
    });
    await markIssued(name!);
    await eventually('both listeners', async () => (await domainListeners()).length === 2);
    await updateSpec('shop', (spec) => ({ ...spec, customDomains: [] }));
    await eventually('shop.example.com’s listener gone', async () => {
      const hosts = (await domainListeners()).map((l) => l.hostname);
      return hosts.length === 1 && hosts[0] === 'blog.example.org';
    });
    await eventually('its route host gone', async () => (await routeOf('shop'))?.spec.hostnames.length === 1);
    expect((await routeOf('shop'))?.spec.parentRefs.map((p) => p.sectionName)).toEqual(['https']);
    expect((await certificateSecrets('shop')).size).toBe(0);
  });

  it('a removed domain’s listener goes after the route stopped naming it, its Secret after that', async () => {
    await applySite('cafe', { slug: 'cafe', customDomains: ['cafe.example.net'] });
    const [name] = await eventually('the Certificate of cafe.example.net', async () => {
      const names = await certificateNames('cafe');
      return names.length === 1 ? names : undefined;
    });
    const secretName = (await certificateSecrets('cafe')).get('cafe.example.net')!;
    await fx.core.createNamespacedSecret({
      namespace: fx.namespace,
      body: {
        metadata: { name: secretName },
        type: 'kubernetes.io/tls',
        stringData: { 'tls.crt': '', 'tls.key': '' },
      },
    });
    await markIssued(name!);
    const listener = await eventually('the listener of cafe.example.net', async () =>
      (await domainListeners()).find((l) => l.hostname === 'cafe.example.net'),
    );
    await eventually('the route on it', async () =>
      (await routeOf('cafe'))?.spec.parentRefs.some((p) => p.sectionName === listener.name),
    );
    // etcd revisions order the writes: when the route dropped the listener, when the Gateway
    // dropped it, when the Secret was deleted.
    const at: { route?: number; listener?: number; secret?: number } = {};
    const watch = new Watch(fx.env.kubeConfig());
    const rv = (o: { metadata: { resourceVersion: string } }) => Number(o.metadata.resourceVersion);
    const from = (await fx.core.listNamespacedSecret({ namespace: fx.namespace })).metadata?.resourceVersion;
    const watches = await Promise.all([
      watch.watch(
        `/apis/gateway.networking.k8s.io/v1/namespaces/${fx.namespace}/httproutes`,
        { resourceVersion: from },
        (_type: string, o: HttpRoute & { metadata: { name: string; resourceVersion: string } }) => {
          if (
            o.metadata.name === 'site-cafe' &&
            !o.spec.parentRefs.some((p) => p.sectionName === listener.name)
          )
            at.route ??= rv(o);
        },
        () => undefined,
      ),
      watch.watch(
        `/apis/gateway.networking.k8s.io/v1/namespaces/${fx.namespace}/gateways`,
        { resourceVersion: from },
        (_type: string, o: Gateway & { metadata: { resourceVersion: string } }) => {
          if (!o.spec.listeners.some((l) => l.name === listener.name)) at.listener ??= rv(o);
        },
        () => undefined,
      ),
      watch.watch(
        `/api/v1/namespaces/${fx.namespace}/secrets`,
        { resourceVersion: from },
        (type: string, o: { metadata: { name: string; resourceVersion: string } }) => {
          if (type === 'DELETED' && o.metadata.name === secretName) at.secret = rv(o);
        },
        () => undefined,
      ),
    ]);
    await updateSpec('cafe', (spec) => ({ ...spec, customDomains: [] }));
    await eventually('all three seen', async () => at.route && at.listener && at.secret);
    for (const w of watches) w.abort();
    expect(at.route! < at.listener! && at.listener! < at.secret!, JSON.stringify(at)).toBe(true);
    await fx.sites.delete('cafe');
    await eventually('cafe gone', async () => (await fx.sites.get('cafe')) === undefined);
  });

  it('a deleted Site with a pending domain takes its plain HTTP route too', async () => {
    await applySite('pend', { slug: 'pend', customDomains: ['pend.example.io'] });
    const plain = await eventually('the plain HTTP route', () => routeOf('pend', true));
    expect(plain.spec.hostnames).toEqual(['pend.example.io']);
    await fx.sites.delete('pend');
    await eventually('the Site gone', async () => (await fx.sites.get('pend')) === undefined);
    expect(await routeOf('pend', true)).toBeUndefined();
    expect(await routeOf('pend')).toBeUndefined();
  });

  it('a deleted Site takes its HTTPRoute and its listeners', async () => {
    expect((await routeOf('blog'))?.spec.hostnames).toEqual(['blog.localhost', 'blog.example.org']);
    await fx.sites.delete('blog');
    await eventually('the Site gone', async () => (await fx.sites.get('blog')) === undefined);
    expect(await routeOf('blog')).toBeUndefined();
    expect(await domainListeners()).toEqual([]);
    expect((await gateway()).spec.listeners.map((l) => l.name)).toEqual(['http', 'https']);
  });
});
