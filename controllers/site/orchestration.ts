import type { SiteResource, SiteSpec } from '../../src/kube/index.js';
import type { ReconcileResult } from '../runtime/controller.js';
import { isRefusal, WAITING_RETRY_MS, type RefusedOn } from '../runtime/reconcile.js';
import type { SiteContext } from './context.js';
import { linkSite } from './database-link.js';
import { applySiteHttpRoute } from './httproute.js';
import { applySiteIngress } from './ingress.js';
import { removeStaleRouting } from './routing-switch.js';
import { certificatesNeedPolling, pruneSiteTls, reconcileSiteTls } from './site-tls.js';
import { writeRoutedStatus } from './status.js';

/**
 * A live Site with a valid spec, one concern per module: the site exists in the database
 * (database-link.ts: adopted with a first API key when the resource came first), the database
 * routes its slug and custom domains, cert-manager Certificates cover the hosts that need one
 * (site-tls.ts, certificates.ts), one Ingress (ingress.ts) or HTTPRoute (httproute.ts) owned by
 * the Site routes them to the edge (after a switch of routing mode, the other kind's goes once this
 * one is applied: routing-switch.ts), and the status says how that went (status.ts).
 */
export async function orchestrateSite(
  context: SiteContext,
  site: SiteResource,
  spec: SiteSpec,
): Promise<ReconcileResult | RefusedOn<SiteResource> | void> {
  const linked = await linkSite(context, site, spec);
  if (isRefusal(linked)) return { ...linked, resource: site };
  site = linked.resource;

  const customDomains = spec.customDomains ?? [];
  const rejectedDomains = customDomains.filter((d) => isPlatformHost(context, d));
  const wanted = customDomains.filter((d) => !isPlatformHost(context, d));
  const routing = await context.platform.applyRouting(linked.siteId, spec.slug, wanted);
  if (!routing.slugApplied) {
    context.events.warning(
      site,
      'SlugTaken',
      `slug "${spec.slug}" belongs to another site; keeping "${routing.slug}"`,
    );
  }

  const slugHost = `${routing.slug}.${context.config.sitesDomain}`;
  const routed = routing.domains.filter((d) => d.routed).map((d) => d.hostname);
  const tls = await reconcileSiteTls(context, site, spec, slugHost, routed);
  const gateway = context.config.kubernetes.routing?.mode === 'gateway';
  const route = gateway
    ? await applySiteHttpRoute(context, site, tls.hosts)
    : await applySiteIngress(context, site, tls.hosts);
  if (isRefusal(route)) return { ...route, resource: site };
  // Only now that the route no longer names them: a removed host's Certificate and Secret.
  await pruneSiteTls(context, site, tls);
  // Only now that this mode's route is applied: the other mode's, after a switch of routing mode.
  const converged = await removeStaleRouting(context, site);

  const notReady = await writeRoutedStatus(context, site, {
    siteId: linked.siteId,
    spec,
    routing,
    rejectedDomains,
    ...(gateway ? { httpRouteName: route.name } : { ingressName: route.name }),
    apiKeySecretName: linked.apiKeySecretName,
    tls,
    httpsHosts: route.httpsHosts,
  });
  // A taken slug or domain may be released later: look again without waiting for the resync.
  return notReady || !converged || certificatesNeedPolling(context, tls)
    ? { requeueAfterMs: WAITING_RETRY_MS }
    : undefined;
}

/** The API host, the sites domain and `<anything>.<sites domain>` are the platform's own. */
function isPlatformHost(context: SiteContext, hostname: string): boolean {
  const { sitesDomain, baseUrl } = context.config;
  return (
    hostname === new URL(baseUrl).hostname || hostname === sitesDomain || hostname.endsWith(`.${sitesDomain}`)
  );
}
