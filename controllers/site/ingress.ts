import { PatchStrategy, type V1Ingress, type V1IngressTLS } from '@kubernetes/client-node';
import { isNotFound, type SiteResource } from '../../src/kube/index.js';
import type { Refusal } from '../runtime/reconcile.js';
import { CONTROLLER_NAME } from '../runtime/setup.js';
import { ingressNameFor, type SiteContext, type SiteHosts } from './context.js';
import { isControlledBy, siteObjectLabels, siteOwnerReference } from './owned.js';

/**
 * Server-side apply of the Site's Ingress (the controller owns every field it sets): the slug's
 * host and the routed custom domains, to the edge Service, with a `tls` entry per host that has a
 * Secret (the wildcard Secret for the slug host, each domain's Certificate Secret). No cert-manager
 * annotations: the controller makes the Certificates itself (certificates.ts), which works the same
 * behind a Gateway; an annotation would have ingress-shim make a second Certificate for the same
 * hosts. An Ingress of that name that this Site does not control is left alone: forcing our fields
 * onto it would take over someone else's routing.
 */
export async function applySiteIngress(
  context: SiteContext,
  site: SiteResource,
  hosts: SiteHosts,
): Promise<{ name: string; httpsHosts: Set<string> } | Refusal> {
  const kube = context.config.kubernetes;
  const name = ingressNameFor(site.metadata.name);
  const existing = await readIngress(context, name);
  if (existing && !isControlledBy(existing.metadata, site)) {
    return {
      refused: `Ingress ${name} exists and is not controlled by this Site`,
      reason: 'IngressConflict',
    };
  }
  const all = [hosts.slugHost, ...hosts.domains];
  const backend = { service: { name: kube.edgeService.name, port: { number: kube.edgeService.port } } };
  const httpsHosts = all.filter((host) => hosts.secrets.has(host));
  const tls: V1IngressTLS[] = httpsHosts.map((host) => ({
    hosts: [host],
    secretName: hosts.secrets.get(host),
  }));
  const ingress: V1Ingress = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: kube.namespace,
      labels: siteObjectLabels(site),
      ownerReferences: [siteOwnerReference(site)],
    },
    spec: {
      ...(kube.ingressClass ? { ingressClassName: kube.ingressClass } : {}),
      rules: all.map((host) => ({ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend }] } })),
      ...(tls.length > 0 ? { tls } : {}),
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
  return { name, httpsHosts: new Set(httpsHosts) };
}

/**
 * Deletes the Site's Ingress if this Site controls it. Explicitly, not left to garbage
 * collection: routing must stop before the finalizer goes.
 */
export async function deleteSiteIngress(context: SiteContext, site: SiteResource): Promise<void> {
  const name = ingressNameFor(site.metadata.name);
  const ingress = await readIngress(context, name);
  if (!ingress || !isControlledBy(ingress.metadata, site)) return;
  try {
    await context.clients.networking.deleteNamespacedIngress({ name, namespace: context.clients.namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * The Ingress of that name, from the cache of those this controller made. Only a miss asks the API
 * server: one made by someone else carries no managed-by label, so it is never in the cache, and
 * must still be seen before an apply could take it over.
 */
async function readIngress(context: SiteContext, name: string): Promise<V1Ingress | undefined> {
  // The cache holds Ingresses in ingress mode only (HTTPRoutes in gateway mode).
  const cached =
    context.config.kubernetes.routing?.mode === 'gateway'
      ? undefined
      : (context.routes.get(context.clients.namespace, name) as V1Ingress | undefined);
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
