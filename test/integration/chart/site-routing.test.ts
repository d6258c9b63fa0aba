import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certManagerCrds, gatewayApiCrds } from '../../support/kube/external-crds.js';
import { startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';
import { applyObjects, ensureNamespace, installCrds } from '../../support/kube/apply.js';
import {
  chartCrds,
  componentObjects,
  containerEnv,
  describeObject,
  renderChart,
  type Values,
} from '../../support/kube/helm.js';

// Site routing and TLS values: both routing modes rendered, validated by a real API server that
// serves the Gateway API's and cert-manager's own CRDs, with the controller's env and RBAC per mode.

const NAMESPACE = 'hostplane-routing';

let env: KubeTestEnv;

beforeAll(async () => {
  env = await startKubeTestEnv();
  await installCrds(env, [...(await chartCrds()), ...(await gatewayApiCrds()), ...(await certManagerCrds())]);
  await ensureNamespace(env, NAMESPACE);
}, 180_000);

afterAll(async () => {
  await env?.stop();
});

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}
type Role = KubernetesObject & { rules: Rule[] };
type Workload = KubernetesObject & {
  spec: { template: { spec: { containers: { name: string; env?: { name: string; value?: string }[] }[] } } };
};
interface Listener {
  name: string;
  protocol: string;
  port: number;
  hostname?: string;
  tls?: { certificateRefs: { name: string }[] };
}

async function render(values: Values) {
  const objects = await renderChart({ namespace: NAMESPACE, values });
  const results = await applyObjects(env, objects, { dryRun: true });
  expect(results.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`)).toEqual([]);
  const [controller] = componentObjects<Workload>(objects, 'Deployment', 'controller');
  const [role] = componentObjects<Role>(objects, 'Role', 'controller');
  const envOf = (name: string) => containerEnv(controller, name);
  const rulesFor = (resource: string) => role?.rules.filter((r) => r.resources?.includes(resource)) ?? [];
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  return { objects, envOf, rulesFor, byKind };
}

describe('routing.mode=ingress (default)', () => {
  it('no TLS values: Ingresses route, no Gateway API objects, no TLS variables', async () => {
    const { envOf, rulesFor, byKind } = await render({});
    expect(envOf('HOSTPLANE_ROUTING_MODE')).toBe('ingress');
    for (const name of [
      'HOSTPLANE_TLS_ISSUER_NAME',
      'HOSTPLANE_TLS_WILDCARD_SECRET',
      'HOSTPLANE_GATEWAY_NAME',
    ]) {
      expect(envOf(name), name).toBeUndefined();
    }
    expect(rulesFor('ingresses')).toHaveLength(1);
    // Only what a switch from gateway mode left: HTTPRoutes listed once, read and deleted, and
    // their listeners taken off the chart's Gateway (if it is still there).
    expect(rulesFor('httproutes')).toEqual([
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['httproutes'],
        verbs: ['get', 'list', 'delete'],
      },
    ]);
    expect(rulesFor('gateways')).toEqual([
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['gateways'],
        resourceNames: ['hostplane-sites'],
        verbs: ['get', 'patch'],
      },
    ]);
    expect(byKind('Gateway')).toEqual([]);
    expect(byKind('HTTPRoute')).toEqual([]);
  });

  it('sites.tls: the issuer and the wildcard Secret reach the controller; Certificates may be managed', async () => {
    const { envOf, rulesFor } = await render({
      sites: { tls: { issuer: { kind: 'Issuer', name: 'pebble' }, wildcardSecret: 'sites-wildcard' } },
    });
    expect(envOf('HOSTPLANE_TLS_ISSUER_NAME')).toBe('pebble');
    expect(envOf('HOSTPLANE_TLS_ISSUER_KIND')).toBe('Issuer');
    expect(envOf('HOSTPLANE_TLS_WILDCARD_SECRET')).toBe('sites-wildcard');
    expect(rulesFor('certificates')).toEqual([
      {
        apiGroups: ['cert-manager.io'],
        resources: ['certificates'],
        verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      },
    ]);
    // The Secret of a removed domain's certificate is deleted by name.
    expect(rulesFor('secrets')[0]?.verbs).toContain('delete');
  });
});

describe('routing.mode=gateway', () => {
  it('with the chart’s Gateway: HTTP and wildcard HTTPS listeners, HTTP redirected, routes on https', async () => {
    const { envOf, rulesFor, byKind } = await render({
      routing: { mode: 'gateway' },
      gateway: { className: 'traefik', listeners: { http: { port: 8000 }, https: { port: 8443 } } },
      sites: { tls: { issuer: { kind: 'ClusterIssuer', name: 'pebble' }, wildcardSecret: 'sites-wildcard' } },
    });
    const [gateway] = byKind('Gateway') as (KubernetesObject & {
      spec: { gatewayClassName: string; listeners: Listener[] };
    })[];
    expect(gateway?.metadata?.name).toBe('hostplane-sites');
    expect(gateway?.spec.gatewayClassName).toBe('traefik');
    expect(gateway?.spec.listeners).toMatchObject([
      { name: 'http', protocol: 'HTTP', port: 8000 },
      {
        name: 'https',
        protocol: 'HTTPS',
        port: 8443,
        hostname: '*.sites.hostplane.example',
        tls: { certificateRefs: [{ name: 'sites-wildcard' }] },
      },
    ]);
    const [redirect] = byKind('HTTPRoute') as (KubernetesObject & {
      spec: { parentRefs: { name: string; sectionName: string }[]; rules: { filters: unknown[] }[] };
    })[];
    expect(redirect?.spec.parentRefs).toEqual([{ name: 'hostplane-sites', sectionName: 'http' }]);
    // It names no host: a pending custom domain's own route on the http listener (exact host
    // name) takes precedence, so that domain is served over HTTP until its listener exists.
    expect(redirect?.spec).not.toHaveProperty('hostnames');
    expect(redirect?.spec.rules[0]?.filters).toEqual([
      { type: 'RequestRedirect', requestRedirect: { scheme: 'https', statusCode: 301 } },
    ]);

    expect(envOf('HOSTPLANE_ROUTING_MODE')).toBe('gateway');
    expect(envOf('HOSTPLANE_GATEWAY_NAME')).toBe('hostplane-sites');
    expect(envOf('HOSTPLANE_GATEWAY_NAMESPACE')).toBe(NAMESPACE);
    expect(envOf('HOSTPLANE_GATEWAY_SECTION')).toBe('https');
    expect(envOf('HOSTPLANE_GATEWAY_LISTENERS')).toBe('true');
    expect(envOf('HOSTPLANE_GATEWAY_HTTPS_PORT')).toBe('8443');

    // HTTPRoutes instead of Ingresses; the chart's Gateway only, patched with listeners.
    // Only what a switch from ingress mode left: Ingresses listed once, read and deleted.
    expect(rulesFor('ingresses')).toEqual([
      { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: ['get', 'list', 'delete'] },
    ]);
    expect(rulesFor('httproutes')).toMatchObject([{ apiGroups: ['gateway.networking.k8s.io'] }]);
    expect(rulesFor('gateways')).toEqual([
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['gateways'],
        resourceNames: ['hostplane-sites'],
        verbs: ['get', 'patch'],
      },
    ]);
  });

  it('without a wildcard Secret: no HTTPS listener of the chart’s, no redirect, routes on http', async () => {
    const { envOf, byKind } = await render({
      routing: { mode: 'gateway' },
      gateway: { className: 'traefik' },
    });
    const [gateway] = byKind('Gateway') as (KubernetesObject & { spec: { listeners: Listener[] } })[];
    expect(gateway?.spec.listeners.map((l) => l.name)).toEqual(['http']);
    expect(byKind('HTTPRoute')).toEqual([]);
    expect(envOf('HOSTPLANE_GATEWAY_SECTION')).toBe('http');
  });

  it('with the operator’s Gateway: routes attach to gateway.parentRef, no Gateway and no Gateway RBAC', async () => {
    const { envOf, rulesFor, byKind } = await render({
      routing: { mode: 'gateway' },
      gateway: { create: false, parentRef: { name: 'shared', namespace: 'infra', sectionName: 'websecure' } },
    });
    expect(byKind('Gateway')).toEqual([]);
    expect(envOf('HOSTPLANE_GATEWAY_NAME')).toBe('shared');
    expect(envOf('HOSTPLANE_GATEWAY_NAMESPACE')).toBe('infra');
    expect(envOf('HOSTPLANE_GATEWAY_SECTION')).toBe('websecure');
    expect(envOf('HOSTPLANE_GATEWAY_LISTENERS')).toBeUndefined();
    expect(rulesFor('gateways')).toEqual([]);
    expect(rulesFor('httproutes')).toHaveLength(1);
  });

  it('refuses what cannot work: no class for its Gateway, no parentRef without one, an unknown mode', async () => {
    const failure = (values: Values) =>
      renderChart({ namespace: NAMESPACE, values }).then(
        () => 'rendered',
        (err: Error) => err.message,
      );
    expect(await failure({ routing: { mode: 'gateway' } })).toContain('gateway.className is required');
    expect(await failure({ routing: { mode: 'gateway' }, gateway: { create: false } })).toContain(
      'gateway.parentRef.name is required',
    );
    expect(await failure({ routing: { mode: 'istio' } })).toMatch(/routing/);
    // Its own Gateway and another one's listener: the controller's listeners and its RBAC are the
    // chart's Gateway's, so every pass would be refused (403) on the other.
    expect(
      await failure({
        routing: { mode: 'gateway' },
        gateway: { className: 'traefik', parentRef: { name: 'shared', namespace: 'infra' } },
      }),
    ).toContain('gateway.parentRef names the Gateway infra/shared while gateway.create is true');
    expect(
      await failure({
        routing: { mode: 'gateway' },
        gateway: { className: 'traefik', parentRef: { name: 'hostplane-sites', namespace: 'elsewhere' } },
      }),
    ).toContain('Set gateway.create=false');
  });

  it('with the chart’s Gateway named in gateway.parentRef (a listener of it): rendered, with its listeners and RBAC', async () => {
    const { envOf, rulesFor } = await render({
      routing: { mode: 'gateway' },
      gateway: { className: 'traefik', parentRef: { name: 'hostplane-sites', sectionName: 'http' } },
    });
    expect(envOf('HOSTPLANE_GATEWAY_NAME')).toBe('hostplane-sites');
    expect(envOf('HOSTPLANE_GATEWAY_SECTION')).toBe('http');
    expect(envOf('HOSTPLANE_GATEWAY_LISTENERS')).toBe('true');
    expect(rulesFor('gateways')[0]?.resourceNames).toEqual(['hostplane-sites']);
  });
});
