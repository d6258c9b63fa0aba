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
 * HTTPS listener per issued domain to that Gateway (named domain-<hash>, its certificateRef the
 * domain's Secret; the slug host gets one too when no wildcard Secret covers it) and attaches the
 * route to it. Listeners are server-side applied under a field manager
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
  spec?: { listeners?: { name: string }[] };
}

/** The listener of a host with a certificate of its own (a custom domain, a slug host): stable. */
export const listenerNameFor = (host: string): string =>
  `domain-${createHash('sha256').update(host).digest('hex').slice(0, 16)}`;

/** The field manager of one Site's listeners on the shared Gateway. */
const listenerManagerFor = (site: SiteResource): string => `${CONTROLLER_NAME}-site-${site.metadata.name}`;

function gatewayRouting(context: SiteContext): GatewayRouting {
  const routing = context.config.kubernetes.routing;
  if (routing?.mode !== 'gateway') throw new Error('not in gateway routing mode');
  return routing;
}

/** The Gateway of the configured parentRef when the controller manages listeners on it. */
function configuredListenerGateway(routing: GatewayRouting): ListenerGateway | undefined {
  const { name, namespace } = routing.parentRef;
  return routing.listeners ? { name, namespace, httpsPort: routing.listeners.httpsPort } : undefined;
}

/** The plain-HTTP listener of the chart's Gateway (ACME challenges, the redirect to HTTPS). */
export const HTTP_LISTENER = 'http';

/** The route of a Site's hosts still without an HTTPS listener, on HTTP_LISTENER. */
export const httpRouteNameFor = (siteName: string): string => `http-site-${siteName}`.slice(0, 253);

type Route = KubernetesObject & {
  metadata?: OwnedMetadata;
  spec?: { parentRefs?: { name?: string; namespace?: string; sectionName?: string }[] };
};

/** The Gateway a Site's listeners go on, and their HTTPS port. */
interface ListenerGateway {
  name: string;
  namespace: string;
  httpsPort: number;
}

/**
 * Applies the Site's listeners (when the controller manages them), then its HTTPRoute: slug host
 * and routed domains to the edge Service, then removes the listeners the route no longer attaches
 * to (never before the route stopped naming them). An HTTPRoute of that name that this Site does
 * not control is left alone, as is a Gateway that does not exist (reported, looked at again).
 * Returns the hosts served over HTTPS: the slug host under a wildcard Secret, and each host with a
 * listener of its own (issued custom domains; the slug host without a wildcard Secret).
 */
export async function applySiteHttpRoute(
  context: SiteContext,
  site: SiteResource,
  hosts: SiteHosts,
): Promise<{ name: string; httpsHosts: Set<string> } | Refusal> {
  const routing = gatewayRouting(context);
  const kube = context.config.kubernetes;
  const name = ingressNameFor(site.metadata.name);
  const existing = (await readRoute(context, name)) as Route | undefined;
  if (existing && !isControlledBy(existing.metadata, site)) {
    return {
      refused: `HTTPRoute ${name} exists and is not controlled by this Site`,
      reason: 'HTTPRouteConflict',
    };
  }
  const { parentRef } = routing;
  const wildcard = kube.tls?.wildcardSecret;
  const listenerHosts = routing.listeners
    ? [hosts.slugHost, ...hosts.domains].filter((host) => {
        const secret = hosts.secrets.get(host);
        return secret !== undefined && secret !== wildcard;
      })
    : [];
  const httpsHosts = new Set([...(wildcard ? [hosts.slugHost] : []), ...listenerHosts]);
  // The listeners the route attached to until now stay until it no longer does.
  const attached = (existing?.spec?.parentRefs ?? [])
    .map((p) => p.sectionName ?? '')
    .filter((section) => section.startsWith('domain-'));
  let leaving: string[] = [];
  const listenersOn = configuredListenerGateway(routing);
  if (listenersOn) {
    const applied = await applySiteListeners(context, site, listenersOn, hosts, listenerHosts, attached);
    if (!Array.isArray(applied)) return applied;
    leaving = applied;
  }
  const parentRefs = [
    { group: 'gateway.networking.k8s.io', kind: 'Gateway', ...parentRef },
    ...listenerHosts.map((host) => ({
      group: 'gateway.networking.k8s.io',
      kind: 'Gateway',
      name: parentRef.name,
      namespace: parentRef.namespace,
      sectionName: listenerNameFor(host),
    })),
  ];
  await applyRoute(context, site, name, parentRefs, [hosts.slugHost, ...hosts.domains]);
  await applyPlainHttpRoute(context, site, hosts, httpsHosts);
  if (listenersOn && leaving.length > 0) {
    await applySiteListeners(context, site, listenersOn, hosts, listenerHosts, []);
  }
  return { name, httpsHosts };
}

/**
 * Behind an HTTPS section of the chart's Gateway (a wildcard Secret), HTTP is redirected to HTTPS:
 * a host without an HTTPS listener yet (a custom domain whose certificate is not issued, or with no
 * issuer at all) would be unreachable. A second route attaches those hosts to the `http` listener,
 * so they are served over HTTP meanwhile (as behind an Ingress): its exact host names take
 * precedence over the redirect route, which names none. Gone once every host has a listener.
 */
async function applyPlainHttpRoute(
  context: SiteContext,
  site: SiteResource,
  hosts: SiteHosts,
  httpsHosts: ReadonlySet<string>,
): Promise<void> {
  const routing = gatewayRouting(context);
  const section = routing.parentRef.sectionName;
  const plain =
    routing.listeners && section && section !== HTTP_LISTENER
      ? [hosts.slugHost, ...hosts.domains].filter((host) => !httpsHosts.has(host))
      : [];
  const name = httpRouteNameFor(site.metadata.name);
  if (plain.length > 0) {
    const parentRef = { ...routing.parentRef, sectionName: HTTP_LISTENER };
    await applyRoute(
      context,
      site,
      name,
      [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', ...parentRef }],
      plain,
    );
    return;
  }
  // Only one this controller made can be there: its routes are in the cache.
  const cached = context.routes.get(context.clients.namespace, name) as Route | undefined;
  if (cached && isControlledBy(cached.metadata, site)) await deleteRoute(context, name);
}

async function applyRoute(
  context: SiteContext,
  site: SiteResource,
  name: string,
  parentRefs: object[],
  hostnames: string[],
): Promise<void> {
  const kube = context.config.kubernetes;
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
      hostnames,
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
}

async function deleteRoute(context: SiteContext, name: string): Promise<void> {
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

/**
 * One HTTPS listener per host with a certificate of its own, applied under the Site's own field
 * manager, and kept: those of `keep` (listener names) still on the Gateway, as they are. Returns
 * the names kept that are not wanted (to release once the route no longer names them). Skipped
 * when the Site has none and never had any (no write per pass for most Sites).
 */
async function applySiteListeners(
  context: SiteContext,
  site: SiteResource,
  gatewayRef: ListenerGateway,
  hosts: SiteHosts,
  listenerHosts: readonly string[],
  keep: readonly string[],
): Promise<Refusal | string[]> {
  const { httpsPort, ...parentRef } = gatewayRef;
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
  if (listenerHosts.length === 0 && !hadListeners) return [];
  const wanted: object[] = listenerHosts.map((host) => ({
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
  const wantedNames = new Set(listenerHosts.map(listenerNameFor));
  const kept = (gateway.spec?.listeners ?? []).filter(
    (l) => keep.includes(l.name) && !wantedNames.has(l.name),
  );
  const listeners = [...wanted, ...kept];
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
  return kept.map((l) => l.name);
}

/**
 * Takes the Site's listeners off the Gateway and deletes its HTTPRoutes (those it controls): in
 * gateway mode the configured one (when the controller manages listeners), after a switch to
 * ingress mode `listenersOn`, the Gateway the old route attached listeners of its own on (see
 * listenerGatewayOf). A Gateway that is gone has no listeners left to take off.
 */
export async function deleteSiteHttpRoute(
  context: SiteContext,
  site: SiteResource,
  listenersOn?: { name: string; namespace: string },
): Promise<void> {
  const routing = context.config.kubernetes.routing;
  // Listeners first: after a switch to ingress mode only the routes say which Gateway holds the
  // Site's listeners, so a failure between the two steps must leave the routes (tried again, by a
  // later pass or the next leader's LIST), never listeners that nothing points to any more.
  const gatewayRef =
    routing?.mode === 'gateway'
      ? configuredListenerGateway(routing)
      : listenersOn && { ...listenersOn, httpsPort: 443 }; // (no listener is applied: no port)
  if (gatewayRef) {
    const hosts = { slugHost: '', domains: [], secrets: new Map<string, string>() };
    await applySiteListeners(context, site, gatewayRef, hosts, [], []);
  }
  const name = ingressNameFor(site.metadata.name);
  for (const routeName of [name, httpRouteNameFor(site.metadata.name)]) {
    const route = await readRoute(context, routeName);
    if (route && isControlledBy(route.metadata, site)) await deleteRoute(context, routeName);
  }
}

/** The Gateway on which a route attaches to listeners the controller added (domain-<hash>), if any. */
export function listenerGatewayOf(
  route: KubernetesObject & { spec?: unknown },
  namespace: string,
): { name: string; namespace: string } | undefined {
  const refs = (route as Route).spec?.parentRefs ?? [];
  const ref = refs.find((p) => p.sectionName?.startsWith('domain-'));
  return ref?.name ? { name: ref.name, namespace: ref.namespace ?? namespace } : undefined;
}

async function readRoute(
  context: SiteContext,
  name: string,
): Promise<(KubernetesObject & { metadata?: OwnedMetadata }) | undefined> {
  // The cache holds HTTPRoutes in gateway mode only (Ingresses otherwise).
  const cached =
    context.config.kubernetes.routing?.mode === 'gateway'
      ? context.routes.get(context.clients.namespace, name)
      : undefined;
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
