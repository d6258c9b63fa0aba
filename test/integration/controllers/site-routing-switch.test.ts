import {
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type V1Ingress,
  type V1PolicyRule,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiStatus } from '../../../src/kube/client.js';
import type { SiteResource, SiteSpec } from '../../../src/kube/index.js';
import { registry } from '../../../src/observability/index.js';
import type { RunningController } from '../../../src/server/index.js';
import {
  certificateKind as cm,
  issuedStatus,
  setCertificateStatus,
} from '../../support/kube/cert-manager.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';
import { certManagerCrds, gatewayApiCrds } from '../../support/kube/external-crds.js';
import { applyOrThrow, installChartRbac, installCrds } from '../../support/kube/apply.js';
import { renderChart } from '../../support/kube/helm.js';

// A switch of routing mode on a running install (helm upgrade --set routing.mode=…): the controller
// restarts in the new mode, as the chart's ServiceAccount with the new mode's Role, and each Site
// ends up with exactly the routing objects of that mode: the old kind goes once the new one is
// applied, and with it the Gateway listeners the controller had added; what a Site does not
// control stays.

const ISSUER = { kind: 'ClusterIssuer' as const, name: 'pebble' };
const WILDCARD = 'sites-wildcard-tls';
const GATEWAY = 'hostplane-sites';
const gw = { group: 'gateway.networking.k8s.io', version: 'v1' };
const TLS_VALUES = { sites: { tls: { issuer: ISSUER, wildcardSecret: WILDCARD } } };
const GATEWAY_VALUES = { ...TLS_VALUES, routing: { mode: 'gateway' }, gateway: { className: 'traefik' } };

let fx: ClusterFixture;
let custom: CustomObjectsApi;
let controller: RunningController | undefined;

interface Gateway {
  metadata: { managedFields?: { manager?: string }[] };
  spec: { listeners: { name: string; hostname?: string }[] };
}
interface HttpRoute {
  spec: { hostnames: string[]; parentRefs: { sectionName?: string }[] };
}

/** The controller restarted in `mode`, with the Role the chart renders for that mode (or `edit`ed). */
async function runIn(
  mode: 'ingress' | 'gateway',
  edit?: (rules: V1PolicyRule[]) => V1PolicyRule[],
): Promise<void> {
  await controller?.close();
  const rbac = await installChartRbac(fx.env, fx.namespace, mode === 'gateway' ? GATEWAY_VALUES : TLS_VALUES);
  if (edit) {
    const roles = fx.env.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    const role = (await roles.listNamespacedRole({ namespace: fx.namespace })).items.find((r) =>
      r.metadata?.name?.endsWith('-controller'),
    );
    if (!role?.metadata?.name) throw new Error('no Role');
    await roles.replaceNamespacedRole({
      name: role.metadata.name,
      namespace: fx.namespace,
      body: { ...role, rules: edit(role.rules ?? []) },
    });
  }
  controller = await fx.startController({
    token: rbac.controllerToken,
    kubernetes: {
      tls: { issuer: ISSUER, wildcardSecret: WILDCARD },
      routing:
        mode === 'gateway'
          ? {
              mode: 'gateway',
              parentRef: { name: GATEWAY, namespace: fx.namespace, sectionName: 'https' },
              listeners: { httpsPort: 443 },
            }
          : { mode: 'ingress' },
    },
  });
}

beforeAll(async () => {
  fx = await startClusterFixture('hp-switch');
  // No Gateway API yet: it is installed before the switch to gateway mode.
  await installCrds(fx.env, await certManagerCrds());
  custom = fx.env.kubeConfig().makeApiClient(CustomObjectsApi);
  await runIn('ingress');
}, 180_000);

afterAll(async () => {
  await fx?.stop();
});

const applySite = (name: string, spec: Partial<SiteSpec> & { slug: string }) =>
  fx.sites.create({ metadata: { name }, spec: spec as SiteSpec });

/** Ready for its current generation, routed by `field` (ingressName or httpRouteName). */
const routedSite = (name: string, field: 'ingressName' | 'httpRouteName') =>
  eventually(`Site ${name} Ready with its ${field}`, async () => {
    const site = await fx.sites.get(name);
    return site?.status?.observedGeneration === site?.metadata.generation &&
      site?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
      site?.status?.[field] === `site-${name}`
      ? (site as SiteResource)
      : undefined;
  });

async function ingressOf(site: string): Promise<V1Ingress | undefined> {
  try {
    return await fx.networking.readNamespacedIngress({ name: `site-${site}`, namespace: fx.namespace });
  } catch (err) {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  }
}

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

const gateway = async (): Promise<Gateway> =>
  (await custom.getNamespacedCustomObject({
    ...gw,
    plural: 'gateways',
    namespace: fx.namespace,
    name: GATEWAY,
  })) as Gateway;

async function certificatesOf(site: string): Promise<{ name: string; secretName: string }[]> {
  const list = (await custom.listNamespacedCustomObject({
    ...cm,
    namespace: fx.namespace,
    labelSelector: `hostplane.dev/site=${site}`,
  })) as { items: { metadata: { name: string }; spec: { secretName: string } }[] };
  return list.items.map((c) => ({ name: c.metadata.name, secretName: c.spec.secretName }));
}

async function eventReasons(site: string): Promise<string[]> {
  const events = await fx.core.listNamespacedEvent({
    namespace: fx.namespace,
    fieldSelector: `involvedObject.name=${site},involvedObject.kind=Site`,
  });
  return events.items.map((e) => e.reason ?? '');
}

async function removedCount(kind: string): Promise<number> {
  const metric = await registry.getSingleMetric('hostplane_site_stale_routing_removed_total')?.get();
  return metric?.values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

describe('a switch of routing mode converges', () => {
  it('ingress → gateway: each Site gets its HTTPRoute, then its Ingress is removed (an Event says so); no Gateway API before: no error', async () => {
    await applySite('alpha', { slug: 'alpha' });
    await routedSite('alpha', 'ingressName');
    expect(await ingressOf('alpha')).toBeDefined();
    // Without the Gateway API's CRDs there is no HTTPRoute to look for: not an error.
    expect(await eventReasons('alpha')).not.toContain('StaleRoutingNotRemoved');

    await installCrds(fx.env, await gatewayApiCrds());
    // The chart's Gateway, applied for real; it stays through the switches (the test runs no helm).
    const rendered = await renderChart({ namespace: fx.namespace, values: GATEWAY_VALUES });
    await applyOrThrow(
      fx.env,
      rendered.filter((o) => o.kind === 'Gateway'),
    );
    // Someone else's Ingress under the name the Site "beta" would use, with the controller's
    // labels copied onto it but no owner: beta is refused in ingress mode.
    await fx.networking.createNamespacedIngress({
      namespace: fx.namespace,
      body: {
        metadata: {
          name: 'site-beta',
          labels: { 'app.kubernetes.io/managed-by': 'hostplane-controller', 'hostplane.dev/site': 'beta' },
        },
        spec: { rules: [{ host: 'beta.example.com' }] },
      },
    });
    await applySite('beta', { slug: 'beta' });
    await eventually('beta refused', async () =>
      (await fx.sites.get('beta'))?.status?.conditions?.some((c) => c.reason === 'IngressConflict'),
    );

    await runIn('gateway');
    const site = await routedSite('alpha', 'httpRouteName');
    expect(site.status?.ingressName).toBeUndefined();
    expect((await routeOf('alpha'))?.spec.hostnames).toEqual(['alpha.localhost']);
    await eventually('the Ingress of alpha gone', async () => (await ingressOf('alpha')) === undefined);
    await eventually('the Event', async () => (await eventReasons('alpha')).includes('StaleRoutingRemoved'));
    expect(await removedCount('Ingress')).toBeGreaterThanOrEqual(1);
  });

  it('gateway mode: an Ingress of the same name that the Site does not control stays', async () => {
    // Its status is written after the pass looked for what the old mode left.
    await routedSite('beta', 'httpRouteName');
    const foreign = await ingressOf('beta');
    expect(foreign?.spec?.rules?.[0]?.host).toBe('beta.example.com');
    expect(foreign?.metadata?.ownerReferences ?? []).toEqual([]);
    expect(await eventReasons('beta')).not.toContain('StaleRoutingRemoved');
  });

  it('gateway → ingress: each Site gets its Ingress, then its HTTPRoutes and Gateway listeners go', async () => {
    await applySite('shop', { slug: 'shop', customDomains: ['shop.example.com'] });
    const [certificate] = await eventually('the Certificate of shop.example.com', async () => {
      const found = await certificatesOf('shop');
      return found.length === 1 ? found : undefined;
    });
    await setCertificateStatus(custom, fx.namespace, certificate!.name, issuedStatus());
    const listener = await eventually('the listener of shop.example.com', async () =>
      (await gateway()).spec.listeners.find((l) => l.hostname === 'shop.example.com'),
    );
    await eventually('the route on it', async () =>
      (await routeOf('shop'))?.spec.parentRefs.some((p) => p.sectionName === listener.name),
    );
    // A domain without a certificate yet: served over HTTP by a route of its own.
    await applySite('pend', { slug: 'pend', customDomains: ['pend.example.io'] });
    await eventually('the plain HTTP route of pend', () => routeOf('pend', true));

    await runIn('ingress');
    await routedSite('shop', 'ingressName');
    await routedSite('pend', 'ingressName');
    await routedSite('alpha', 'ingressName');
    const ingress = await ingressOf('shop');
    expect(ingress?.spec?.rules?.map((r) => r.host)).toEqual(['shop.localhost', 'shop.example.com']);
    // The same Certificate serves either mode: nothing of it is left behind by the switch.
    expect(ingress?.spec?.tls?.find((t) => t.hosts?.includes('shop.example.com'))?.secretName).toBe(
      certificate!.secretName,
    );
    expect(await certificatesOf('shop')).toEqual([certificate]);
    for (const [site, plain] of [
      ['shop', false],
      ['pend', false],
      ['pend', true],
      ['alpha', false],
    ] as const) {
      await eventually(
        `the HTTPRoute of ${site}${plain ? ' (plain)' : ''} gone`,
        async () => (await routeOf(site, plain)) === undefined,
      );
    }
    await eventually('the listener of shop.example.com gone', async () => {
      const current = await gateway();
      return (
        !current.spec.listeners.some((l) => l.name === listener.name) &&
        !current.metadata.managedFields?.some((f) => f.manager === 'hostplane-controller-site-shop')
      );
    });
    expect((await gateway()).spec.listeners.map((l) => l.name)).toEqual(['http', 'https']);
    expect(await removedCount('HTTPRoute')).toBeGreaterThanOrEqual(3);
  });

  it('ingress mode: a Site whose Ingress cannot be applied keeps its HTTPRoute (no gap in routing)', async () => {
    await eventually('beta refused again', async () =>
      (await fx.sites.get('beta'))?.status?.conditions?.some((c) => c.reason === 'IngressConflict'),
    );
    expect(await routeOf('beta')).toBeDefined();
  });

  it('a removal that fails does not hold the Site back: a Warning Event, and it is tried again', async () => {
    await applySite('gamma', { slug: 'gamma' });
    await routedSite('gamma', 'ingressName');
    // A Role without `delete` on Ingresses, as a hand-made one might be.
    await runIn('gateway', (rules) =>
      rules.map((rule) =>
        rule.resources?.includes('ingresses') ? { ...rule, verbs: ['get', 'list'] } : rule,
      ),
    );
    await routedSite('gamma', 'httpRouteName');
    await eventually('the Warning', async () =>
      (await eventReasons('gamma')).includes('StaleRoutingNotRemoved'),
    );
    expect(await ingressOf('gamma')).toBeDefined();
    // The chart's Role again: a later pass removes it.
    await installChartRbac(fx.env, fx.namespace, GATEWAY_VALUES);
    await eventually('the Ingress of gamma gone', async () => (await ingressOf('gamma')) === undefined);
    expect(await eventReasons('gamma')).toContain('StaleRoutingRemoved');
  });

  it('Gateway listeners that cannot be taken off keep their route, so a restarted controller still removes both', async () => {
    await applySite('delta', { slug: 'delta', customDomains: ['delta.example.com'] });
    const [certificate] = await eventually('the Certificate of delta.example.com', async () => {
      const found = await certificatesOf('delta');
      return found.length === 1 ? found : undefined;
    });
    await setCertificateStatus(custom, fx.namespace, certificate!.name, issuedStatus());
    const listener = await eventually('the listener of delta.example.com', async () =>
      (await gateway()).spec.listeners.find((l) => l.hostname === 'delta.example.com'),
    );
    await eventually('the route on it', async () =>
      (await routeOf('delta'))?.spec.parentRefs.some((p) => p.sectionName === listener.name),
    );
    // Ingress mode with a Role that may read the Gateway but not patch it.
    await runIn('ingress', (rules) =>
      rules.map((rule) => (rule.resources?.includes('gateways') ? { ...rule, verbs: ['get'] } : rule)),
    );
    await routedSite('delta', 'ingressName');
    await eventually('the Warning', async () =>
      (await eventReasons('delta')).includes('StaleRoutingNotRemoved'),
    );
    // The route stays while its listeners do: it is what says which Gateway holds them.
    expect(await routeOf('delta')).toBeDefined();
    expect((await gateway()).spec.listeners.some((l) => l.name === listener.name)).toBe(true);
    // A restart with the chart's Role: the new leader's LIST finds the route, and both go.
    await runIn('ingress');
    await eventually('the listener of delta.example.com gone', async () =>
      (await gateway()).spec.listeners.every((l) => l.name !== listener.name),
    );
    await eventually('the HTTPRoute of delta gone', async () => (await routeOf('delta')) === undefined);
  });
});
