import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SiteSpec } from '../../../src/kube/resources.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';
import {
  certificateKind as cm,
  issuedStatus,
  setCertificateStatus,
} from '../../support/kube/cert-manager.js';
import { certManagerCrds, gatewayApiCrds } from '../../support/kube/external-crds.js';
import { applyOrThrow, installChartRbac, installCrds } from '../../support/kube/apply.js';
import { renderChart } from '../../support/kube/helm.js';

// Review: gateway mode with an issuer and no wildcard Secret. The slug host gets a Certificate of
// its own and status.url turns https once it is issued; the slug host must then be served over
// HTTPS by some listener of the Gateway.
const ISSUER = { kind: 'ClusterIssuer' as const, name: 'pebble' };
const GATEWAY = 'hostplane-sites';
const gw = { group: 'gateway.networking.k8s.io', version: 'v1' };
let fx: ClusterFixture;
let custom: CustomObjectsApi;

beforeAll(async () => {
  fx = await startClusterFixture('hp-gw-nowild');
  await installCrds(fx.env, [...(await gatewayApiCrds()), ...(await certManagerCrds())]);
  const values = {
    routing: { mode: 'gateway' },
    gateway: { className: 'traefik' },
    sites: { tls: { issuer: ISSUER } },
  };
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
      tls: { issuer: ISSUER },
      // What the chart renders without a wildcard Secret: the http listener.
      routing: {
        mode: 'gateway',
        parentRef: { name: GATEWAY, namespace: fx.namespace, sectionName: 'http' },
        listeners: { httpsPort: 443 },
      },
    },
  });
}, 180_000);

afterAll(async () => {
  await fx?.stop();
});

it('a slug host whose status.url is https is served by an HTTPS listener of the Gateway', async () => {
  await fx.sites.create({ metadata: { name: 'docs' }, spec: { slug: 'docs' } as SiteSpec });
  const name = await eventually('the slug Certificate', async () => {
    const list = (await custom.listNamespacedCustomObject({
      ...cm,
      namespace: fx.namespace,
      labelSelector: 'hostplane.dev/site=docs',
    })) as { items: { metadata: { name: string } }[] };
    return list.items[0]?.metadata.name;
  });
  await setCertificateStatus(custom, fx.namespace, name, issuedStatus('ok'));
  const site = await eventually('status.url https', async () => {
    const s = await fx.sites.get('docs');
    return s?.status?.url?.startsWith('https:') ? s : undefined;
  });
  const gateway = (await custom.getNamespacedCustomObject({
    ...gw,
    plural: 'gateways',
    namespace: fx.namespace,
    name: GATEWAY,
  })) as {
    spec: { listeners: { name: string; hostname?: string; protocol: string }[] };
  };
  const https = gateway.spec.listeners.filter((l) => l.protocol === 'HTTPS');
  expect({ url: site.status?.url, httpsListeners: https }).toMatchObject({
    httpsListeners: expect.arrayContaining([expect.objectContaining({ hostname: 'docs.localhost' })]),
  });
}, 120_000);
