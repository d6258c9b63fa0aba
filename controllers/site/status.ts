import { siteUrl } from '../../src/config/index.js';
import type { DomainStatus, SiteResource, SiteSpec, SiteStatus } from '../../src/kube/index.js';
import type { RoutingResult } from '../../src/platform/index.js';
import { condition, READY, writeStatusIfChanged } from '../runtime/reconcile-helpers.js';
import { certificatesCondition } from './certificate-status.js';
import type { SiteContext } from './context.js';
import type { SiteTls } from './site-tls.js';

/**
 * What a routed Site reports: its site, URL, Ingress (or HTTPRoute), key Secret, each domain's
 * state with its certificate's, and the CertificatesReady condition beside Ready (Ready is about
 * routing: a site whose certificate is still being issued is served, over HTTP meanwhile).
 */
export interface RoutedSite {
  siteId: number;
  spec: SiteSpec;
  routing: RoutingResult;
  /** Custom domains refused because they are the platform's own hosts. */
  rejectedDomains: string[];
  /** The Ingress, or with Gateway API routing the HTTPRoute. */
  ingressName?: string;
  httpRouteName?: string;
  apiKeySecretName: string | undefined;
  tls: SiteTls;
  /** The hosts the route serves over HTTPS (a Secret, and with a Gateway a listener, for each). */
  httpsHosts: ReadonlySet<string>;
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
  const { routing, spec, tls } = routed;
  const certificates = tls.certificates.hosts;
  const certificateOf = (hostname: string) => {
    const certificate = certificates.get(hostname);
    return certificate ? { certificate } : {};
  };
  const domains: DomainStatus[] = [
    ...routing.domains.map((d) =>
      d.routed
        ? { hostname: d.hostname, ready: true, ...certificateOf(d.hostname) }
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
  const certificatesReady = certificatesCondition(site, tls.certificates);
  const slugHost = tls.hosts.slugHost;
  const status: Omit<SiteStatus, 'observedGeneration'> = {
    conditions: certificatesReady ? [ready, certificatesReady] : [ready],
    siteId: routed.siteId,
    url: siteUrlFor(context, routing.slug, routed.httpsHosts.has(slugHost)),
    ingressName: routed.ingressName,
    httpRouteName: routed.httpRouteName,
    certificate: certificates.get(slugHost),
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
