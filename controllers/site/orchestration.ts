import type { SiteResource, SiteSpec } from '../../src/kube/index.js';
import type { ReconcileResult } from '../runtime/controller.js';
import { isRefusal, WAITING_RETRY_MS, type RefusedOn } from '../runtime/reconcile.js';
import type { SiteContext } from './context.js';
import { linkSite } from './database-link.js';
import { applySiteIngress } from './ingress.js';
import { writeRoutedStatus } from './status.js';

/**
 * A live Site with a valid spec, one concern per module: the site exists in the database
 * (database-link.ts: adopted with a first API key when the resource came first), the database
 * routes its slug and custom domains, one Ingress owned by the Site routes them to the edge
 * (ingress.ts), and the status says how that went (status.ts).
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

  const ingress = await applySiteIngress(context, site, spec, routing);
  if (isRefusal(ingress)) return { ...ingress, resource: site };

  const notReady = await writeRoutedStatus(context, site, {
    siteId: linked.siteId,
    spec,
    routing,
    rejectedDomains,
    ingressName: ingress.name,
    apiKeySecretName: linked.apiKeySecretName,
  });
  // A taken slug or domain may be released later: look again without waiting for the resync.
  return notReady ? { requeueAfterMs: WAITING_RETRY_MS } : undefined;
}

/** The API host, the sites domain and `<anything>.<sites domain>` are the platform's own. */
function isPlatformHost(context: SiteContext, hostname: string): boolean {
  const { sitesDomain, baseUrl } = context.config;
  return (
    hostname === new URL(baseUrl).hostname || hostname === sitesDomain || hostname.endsWith(`.${sitesDomain}`)
  );
}
