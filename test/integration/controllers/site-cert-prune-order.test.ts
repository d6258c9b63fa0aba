import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SiteSpec } from '../../../src/kube/resources.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';
import {
  certificateKind as cm,
  issuedStatus,
  setCertificateStatus,
} from '../../support/kube/cert-manager.js';
import { certManagerCrds } from '../../support/kube/external-crds.js';
import { installChartRbac, installCrds } from '../../support/kube/apply.js';

// Review: when a domain goes, its Secret must not be deleted while the Ingress still names it
// (Traefik drops a whole Ingress whose tls names a missing Secret: the slug host with it).
// etcd revisions order the two writes: the Secret's deletion must come after the Ingress update.
const ISSUER = { kind: 'ClusterIssuer' as const, name: 'pebble' };
const WILDCARD = 'sites-wildcard-tls';
let fx: ClusterFixture;
let custom: CustomObjectsApi;

beforeAll(async () => {
  fx = await startClusterFixture('hp-prune-order');
  await installCrds(fx.env, await certManagerCrds());
  const rbac = await installChartRbac(fx.env, fx.namespace, {
    sites: { tls: { issuer: ISSUER, wildcardSecret: WILDCARD } },
  });
  custom = fx.env.kubeConfig().makeApiClient(CustomObjectsApi);
  await fx.startController({
    token: rbac.controllerToken,
    kubernetes: { tls: { issuer: ISSUER, wildcardSecret: WILDCARD } },
  });
}, 180_000);

afterAll(async () => {
  await fx?.stop();
});

it('the Ingress stops naming a removed domain’s Secret before that Secret is deleted', async () => {
  await fx.sites.create({
    metadata: { name: 'shop' },
    spec: { slug: 'shop', customDomains: ['shop.example.com'] } as SiteSpec,
  });
  const [name, secretName] = await eventually('the Certificate', async () => {
    const list = (await custom.listNamespacedCustomObject({
      ...cm,
      namespace: fx.namespace,
      labelSelector: 'hostplane.dev/site=shop',
    })) as { items: { metadata: { name: string }; spec: { secretName: string } }[] };
    const c = list.items[0];
    return c ? [c.metadata.name, c.spec.secretName] : undefined;
  });
  await fx.core.createNamespacedSecret({
    namespace: fx.namespace,
    body: {
      metadata: { name: secretName },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': '', 'tls.key': '' },
    },
  });
  await setCertificateStatus(custom, fx.namespace, name, issuedStatus('ok'));
  const ingressNames = async () => {
    const ing = await fx.networking.readNamespacedIngress({ name: 'site-shop', namespace: fx.namespace });
    return { tls: (ing.spec?.tls ?? []).map((t) => t.secretName), rv: Number(ing.metadata?.resourceVersion) };
  };
  await eventually('the Ingress names the Secret', async () =>
    (await ingressNames()).tls.includes(secretName!),
  );

  const secrets = await fx.core.listNamespacedSecret({ namespace: fx.namespace });
  let deletedAt: number | undefined;
  const watching = await new Watch(fx.env.kubeConfig()).watch(
    `/api/v1/namespaces/${fx.namespace}/secrets`,
    { resourceVersion: secrets.metadata?.resourceVersion },
    (type: string, obj: { metadata: { name: string; resourceVersion: string } }) => {
      if (type === 'DELETED' && obj.metadata.name === secretName)
        deletedAt = Number(obj.metadata.resourceVersion);
    },
    () => undefined,
  );
  const site = await fx.sites.get('shop');
  await fx.sites.replace({ ...site!, spec: { ...site!.spec, customDomains: [] } });
  await eventually('the Secret deleted', async () => deletedAt !== undefined);
  const after = await eventually('the Ingress without the Secret', async () => {
    const n = await ingressNames();
    return n.tls.includes(secretName!) ? undefined : n;
  });
  watching.abort();
  // The Ingress update that dropped the Secret must precede the Secret's deletion.
  expect({ ingressUpdatedAt: after.rv, secretDeletedAt: deletedAt }).toEqual({
    ingressUpdatedAt: expect.any(Number),
    secretDeletedAt: expect.toSatisfy((d: number) => d > after.rv),
  });
}, 120_000);
