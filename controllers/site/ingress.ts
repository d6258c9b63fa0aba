import { PatchStrategy, type V1Ingress, type V1OwnerReference } from '@kubernetes/client-node';
import {
  API_VERSION,
  isNotFound,
  MANAGED_BY_LABEL,
  SITE_LABEL,
  siteKind,
  type SiteResource,
  type SiteSpec,
} from '../../src/kube/index.js';
import type { RoutingResult } from '../../src/platform/index.js';
import type { Refusal } from '../runtime/reconcile.js';
import { CONTROLLER_NAME } from '../runtime/setup.js';
import { ingressNameFor, type SiteContext } from './context.js';

/**
 * Server-side apply of the Site's Ingress (the controller owns every field it sets): the slug's
 * host and the routed custom domains, to the edge Service. An Ingress of that name that this
 * Site does not control is left alone: forcing our fields onto it would take over someone
 * else's routing.
 */
export async function applySiteIngress(
  context: SiteContext,
  site: SiteResource,
  spec: SiteSpec,
  routing: RoutingResult,
): Promise<{ name: string } | Refusal> {
  const { sitesDomain } = context.config;
  const kube = context.config.kubernetes;
  const name = ingressNameFor(site.metadata.name);
  const existing = await readIngress(context, name);
  if (existing && !isControlledBy(existing.metadata?.ownerReferences, site)) {
    return {
      refused: `Ingress ${name} exists and is not controlled by this Site`,
      reason: 'IngressConflict',
    };
  }
  const hosts = [
    `${routing.slug}.${sitesDomain}`,
    ...routing.domains.filter((d) => d.routed).map((d) => d.hostname),
  ];
  const backend = { service: { name: kube.edgeService.name, port: { number: kube.edgeService.port } } };
  const annotations: Record<string, string> = {};
  if (spec.tls) {
    const key =
      spec.tls.issuerKind === 'Issuer' ? 'cert-manager.io/issuer' : 'cert-manager.io/cluster-issuer';
    annotations[key] = spec.tls.issuerName;
  }
  const ingress: V1Ingress = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: kube.namespace,
      labels: { [MANAGED_BY_LABEL]: CONTROLLER_NAME, [SITE_LABEL]: site.metadata.name },
      annotations,
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: siteKind.kind,
          name: site.metadata.name,
          uid: site.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      ...(kube.ingressClass ? { ingressClassName: kube.ingressClass } : {}),
      rules: hosts.map((host) => ({ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend }] } })),
      ...(spec.tls ? { tls: [{ hosts, secretName: `${name}-tls` }] } : {}),
    },
  };
  await context.clients.objects.patch(
    ingress,
    undefined,
    undefined,
    CONTROLLER_NAME,
    true,
    PatchStrategy.ServerSideApply,
  );
  return { name };
}

/**
 * Deletes the Site's Ingress if this Site controls it. Explicitly, not left to garbage
 * collection: routing must stop before the finalizer goes.
 */
export async function deleteSiteIngress(context: SiteContext, site: SiteResource): Promise<void> {
  const name = ingressNameFor(site.metadata.name);
  const ingress = await readIngress(context, name);
  if (!ingress || !isControlledBy(ingress.metadata?.ownerReferences, site)) return;
  try {
    await context.clients.networking.deleteNamespacedIngress({ name, namespace: context.clients.namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** The owner of the Ingresses this controller made, for queueing a Site when its Ingress changes. */
export function owningSiteName(ingress: V1Ingress): string | undefined {
  return ingress.metadata?.ownerReferences?.find((o) => o.controller && o.kind === siteKind.kind)?.name;
}

/**
 * The Ingress of that name, from the cache of those this controller made. Only a miss asks the API
 * server: one made by someone else carries no managed-by label, so it is never in the cache, and
 * must still be seen before an apply could take it over.
 */
async function readIngress(context: SiteContext, name: string): Promise<V1Ingress | undefined> {
  const cached = context.ingresses.get(context.clients.namespace, name);
  if (cached) return cached;
  try {
    return await context.clients.networking.readNamespacedIngress({
      name,
      namespace: context.clients.namespace,
    });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function isControlledBy(owners: V1OwnerReference[] | undefined, site: SiteResource): boolean {
  return (owners ?? []).some((o) => o.controller && o.kind === siteKind.kind && o.uid === site.metadata.uid);
}
