import { siteUrl } from '../../src/config/index.js';
import type { DomainStatus, SiteResource, SiteSpec, SiteStatus } from '../../src/kube/index.js';
import type { RoutingResult } from '../../src/platform/index.js';
import { condition, READY, writeStatusIfChanged } from '../runtime/reconcile-helpers.js';
import type { SiteContext } from './context.js';

/** What a routed Site reports: its site, URL, Ingress, key Secret and each domain's state. */
export interface RoutedSite {
  siteId: number;
  spec: SiteSpec;
  routing: RoutingResult;
  /** Custom domains refused because they are the platform's own hosts. */
  rejectedDomains: string[];
  ingressName: string;
  apiKeySecretName: string | undefined;
}

/**
 * Writes the status of a routed Site (when it changed). Returns the reason it is not Ready, if
 * any: a taken slug or domain may be released later, so the caller looks again.
 */
export async function writeRoutedStatus(
  context: SiteContext,
  site: SiteResource,
  routed: RoutedSite,
): Promise<string | undefined> {
  const { routing, spec } = routed;
  const domains: DomainStatus[] = [
    ...routing.domains.map((d) =>
      d.routed
        ? { hostname: d.hostname, ready: true }
        : {
            hostname: d.hostname,
            ready: false,
            reason: 'DomainTaken',
            message: 'another site already serves this host name',
          },
    ),
    ...routed.rejectedDomains.map((hostname) => ({
      hostname,
      ready: false,
      reason: 'DomainRejected',
      message: 'the API host, the sites domain and its subdomains cannot be custom domains',
    })),
  ];
  const problems = [
    ...(routing.slugApplied ? [] : [`slug "${spec.slug}" is taken by another site`]),
    ...domains.filter((d) => !d.ready).map((d) => `${d.hostname}: ${d.message}`),
  ];
  const reason = !routing.slugApplied ? 'SlugTaken' : domains.find((d) => !d.ready)?.reason;
  const ready = reason
    ? condition(site, READY, 'False', reason, problems.join('; '))
    : condition(site, READY, 'True', 'Reconciled', 'the site is routed to the edge');
  const status: Omit<SiteStatus, 'observedGeneration'> = {
    conditions: [ready],
    siteId: routed.siteId,
    url: siteUrlFor(context, routing.slug, spec.tls !== undefined),
    ingressName: routed.ingressName,
    apiKeySecretName: routed.apiKeySecretName ?? site.status?.apiKeySecretName,
    domains,
  };
  await writeStatusIfChanged(context.clients.sites, site, status);
  return reason;
}

function siteUrlFor(context: SiteContext, slug: string, https: boolean): string {
  const url = siteUrl(context.config, slug);
  return https ? url.replace(/^http:/, 'https:') : url;
}
