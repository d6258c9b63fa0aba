import { PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { isNotFound, type SiteResource } from '../../src/kube/index.js';
import type { Refusal } from '../runtime/reconcile.js';
import { CONTROLLER_NAME } from '../runtime/setup.js';
import { ingressNameFor, type SiteContext, type SiteHosts } from './context.js';
import { isControlledBy, siteObjectLabels, siteOwnerReference, type OwnedMetadata } from './owned.js';

/**
 * Gateway API routing (HOSTPLANE_ROUTING_MODE=gateway): an HTTPRoute per Site instead of the
 * Ingress, attached to the configured parentRef. The Gateway terminates TLS, so a custom domain's
 * certificate must reach a listener: with HOSTPLANE_GATEWAY_LISTENERS the controller adds one
 * HTTPS listener per domain to that Gateway (named domain-<hash>, its certificateRef the domain's
 * Secret) and attaches the route to it. Listeners are server-side applied under a field manager
 * per Site: Gateway listeners are a list map keyed by name, so each Site owns exactly its own
 * entries, and an apply without one removes it. (A ListenerSet per Site would lift the Gateway's
 * 64-listener cap, but Traefik does not implement ListenerSet yet.)
 */

export const GATEWAY_API_VERSION = 'gateway.networking.k8s.io/v1';

type GatewayRouting = Extract<
  NonNullable<SiteContext['config']['kubernetes']['routing']>,
  { mode: 'gateway' }
>;

interface GatewayObject extends KubernetesObject {
  metadata?: KubernetesObject['metadata'] & { managedFields?: { manager?: string }[] };
}

/** The listener of a custom domain: DNS-label-safe and stable. */
export const listenerNameFor = (host: string): string =>
  `domain-${createHash('sha256').update(host).digest('hex').slice(0, 16)}`;

/** The field manager of one Site's listeners on the shared Gateway. */
const listenerManagerFor = (site: SiteResource): string => `${CONTROLLER_NAME}-site-${site.metadata.name}`;

function gatewayRouting(context: SiteContext): GatewayRouting {
  const routing = context.config.kubernetes.routing;
  if (routing?.mode !== 'gateway') throw new Error('not in gateway routing mode');
  return routing;
}

/**
 * Applies the Site's listeners (when the controller manages them), then its HTTPRoute: slug host
 * and routed domains to the edge Service. An HTTPRoute of that name that this Site does not
 * control is left alone, as is a Gateway that does not exist (reported, looked at again).
 */
export async function applySiteHttpRoute(
  context: SiteContext,
  site: SiteResource,
  hosts: SiteHosts,
): Promise<{ name: string } | Refusal> {
  const routing = gatewayRouting(context);
  const kube = context.config.kubernetes;
  const name = ingressNameFor(site.metadata.name);
  const existing = await readRoute(context, name);
  if (existing && !isControlledBy(existing.metadata, site)) {
    return {
      refused: `HTTPRoute ${name} exists and is not controlled by this Site`,
      reason: 'HTTPRouteConflict',
    };
  }
  const { parentRef } = routing;
  const listenerDomains = routing.listeners ? hosts.domains.filter((d) => hosts.secrets.has(d)) : [];
  if (routing.listeners) {
    const applied = await applySiteListeners(
      context,
      site,
      hosts,
      listenerDomains,
      routing.listeners.httpsPort,
    );
    if (applied) return applied;
  }
  const parentRefs = [
    { group: 'gateway.networking.k8s.io', kind: 'Gateway', ...parentRef },
    ...listenerDomains.map((host) => ({
      group: 'gateway.networking.k8s.io',
      kind: 'Gateway',
      name: parentRef.name,
      namespace: parentRef.namespace,
      sectionName: listenerNameFor(host),
    })),
  ];
  const route = {
    apiVersion: GATEWAY_API_VERSION,
    kind: 'HTTPRoute',
    metadata: {
      name,
      namespace: kube.namespace,
      labels: siteObjectLabels(site),
      ownerReferences: [siteOwnerReference(site)],
    },
    spec: {
      parentRefs,
      hostnames: [hosts.slugHost, ...hosts.domains],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: [{ name: kube.edgeService.name, port: kube.edgeService.port }],
        },
      ],
    },
  };
  await context.clients.objects.patch(
    route as KubernetesObject,
    undefined,
    undefined,
    CONTROLLER_NAME,
    true,
    PatchStrategy.ServerSideApply,
  );
  return { name };
}

/**
 * One HTTPS listener per domain with a certificate, applied under the Site's own field manager.
 * Skipped when the Site has none and never had any (no write per pass for most Sites).
 */
async function applySiteListeners(
  context: SiteContext,
  site: SiteResource,
  hosts: SiteHosts,
  domains: readonly string[],
  httpsPort: number,
): Promise<Refusal | undefined> {
  const { parentRef } = gatewayRouting(context);
  const manager = listenerManagerFor(site);
  let gateway: GatewayObject;
  try {
    gateway = await context.clients.objects.read<GatewayObject>({
      apiVersion: GATEWAY_API_VERSION,
      kind: 'Gateway',
      metadata: { name: parentRef.name, namespace: parentRef.namespace },
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    return {
      refused: `Gateway ${parentRef.namespace}/${parentRef.name} does not exist (HOSTPLANE_GATEWAY_NAME)`,
      reason: 'GatewayNotFound',
    };
  }
  const hadListeners = (gateway.metadata?.managedFields ?? []).some((f) => f.manager === manager);
  if (domains.length === 0 && !hadListeners) return undefined;
  const listeners = domains.map((host) => ({
    name: listenerNameFor(host),
    hostname: host,
    port: httpsPort,
    protocol: 'HTTPS',
    tls: {
      mode: 'Terminate',
      certificateRefs: [{ group: '', kind: 'Secret', name: hosts.secrets.get(host) }],
    },
    allowedRoutes: { namespaces: { from: 'Same' } },
  }));
  const patch = {
    apiVersion: GATEWAY_API_VERSION,
    kind: 'Gateway',
    metadata: { name: parentRef.name, namespace: parentRef.namespace },
    // No listeners: an apply that releases every one this Site's manager held.
    ...(listeners.length > 0 ? { spec: { listeners } } : {}),
  };
  await context.clients.objects.patch(
    patch as KubernetesObject,
    undefined,
    undefined,
    manager,
    true,
    PatchStrategy.ServerSideApply,
  );
  return undefined;
}

/** Deletes the Site's HTTPRoute (if it controls it) and takes its listeners off the Gateway. */
export async function deleteSiteHttpRoute(context: SiteContext, site: SiteResource): Promise<void> {
  const routing = gatewayRouting(context);
  const name = ingressNameFor(site.metadata.name);
  const route = await readRoute(context, name);
  if (route && isControlledBy(route.metadata, site)) {
    try {
      await context.clients.objects.delete({
        apiVersion: GATEWAY_API_VERSION,
        kind: 'HTTPRoute',
        metadata: { name, namespace: context.clients.namespace },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  if (routing.listeners) {
    const hosts = { slugHost: '', domains: [], secrets: new Map<string, string>() };
    await applySiteListeners(context, site, hosts, [], routing.listeners.httpsPort);
  }
}

async function readRoute(
  context: SiteContext,
  name: string,
): Promise<(KubernetesObject & { metadata?: OwnedMetadata }) | undefined> {
  const cached = context.routes.get(context.clients.namespace, name);
  if (cached) return cached as KubernetesObject;
  try {
    return await context.clients.objects.read({
      apiVersion: GATEWAY_API_VERSION,
      kind: 'HTTPRoute',
      metadata: { name, namespace: context.clients.namespace },
    });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
