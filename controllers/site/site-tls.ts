import type { CertificateStatus, SiteResource, SiteSpec } from '../../src/kube/index.js';
import {
  recordCertificateTransitions,
  certificateState,
  type CertificateOutcome,
} from './certificate-status.js';
import {
  applyCertificates,
  CertificateApiMissing,
  issuerFor,
  pruneCertificates,
  wantedCertificates,
  type WantedCertificate,
} from './certificates.js';
import type { SiteContext, SiteHosts } from './context.js';
import { trackSiteCertificates } from './metrics.js';

/** The Site's hosts with their TLS Secrets, and how its Certificates stand. */
export interface SiteTls {
  hosts: SiteHosts;
  certificates: CertificateOutcome;
  /** The Certificates the Site wants: the others go in pruneSiteTls, after the route is applied. */
  wanted: WantedCertificate[];
}

/**
 * The TLS half of a pass: the Certificates the Site's hosts need are made (those it no longer
 * needs are removed by pruneSiteTls, after the route), their states read from what the API server answered, Events recorded for the
 * states that changed; each host is given its Secret: the wildcard Secret for the slug host, a
 * Certificate's Secret for the others once it is issued. Without cert-manager's CRD the Site is routed all the same,
 * without those Secrets, and its CertificatesReady condition says why.
 */
export async function reconcileSiteTls(
  context: SiteContext,
  site: SiteResource,
  spec: SiteSpec,
  slugHost: string,
  domains: string[],
): Promise<SiteTls> {
  const wildcard = context.config.kubernetes.tls?.wildcardSecret;
  const issuer = issuerFor(context, spec);
  const wanted = wantedCertificates(context, site, slugHost, domains, issuer);
  const secrets = new Map<string, string>(wildcard ? [[slugHost, wildcard]] : []);
  const states = new Map<string, CertificateStatus>();
  try {
    const applied = await applyCertificates(context, site, wanted, issuer);
    for (const certificate of wanted) {
      const object = applied.get(certificate.host);
      const state = certificateState(certificate, object);
      states.set(certificate.host, state);
      // Only once its Secret holds a certificate (Ready, or issued before: a failed renewal still
      // serves the old one): Traefik drops a whole Ingress whose tls names a missing Secret, and a
      // Gateway listener with one is invalid.
      if (state.state === 'Ready' || object?.status?.notAfter)
        secrets.set(certificate.host, certificate.secretName);
    }
  } catch (err) {
    if (!(err instanceof CertificateApiMissing)) throw err;
    return {
      hosts: { slugHost, domains, secrets },
      certificates: { apiMissing: err.message, hosts: states },
      wanted,
    };
  }
  recordCertificateTransitions(context, site, slugHost, states);
  trackSiteCertificates(
    site.metadata.uid ?? site.metadata.name,
    [...states.values()].map((s) => s.state),
  );
  return { hosts: { slugHost, domains, secrets }, certificates: { hosts: states }, wanted };
}

/** Whether to look again without a Certificate event: no informer tells us, or the CRD is missing. */
export function certificatesNeedPolling(context: SiteContext, tls: SiteTls): boolean {
  if ('apiMissing' in tls.certificates) return true;
  const unsettled = [...tls.certificates.hosts.values()].some((s) => s.state !== 'Ready');
  return unsettled && !context.certificates?.hasSynced();
}

/**
 * Deletes the Certificates (and Secrets) the Site no longer wants: called once the Ingress or
 * HTTPRoute that stopped naming them was applied, never before (a route apply that fails leaves
 * them, and the next pass tries again). Nothing to do without cert-manager's CRD.
 */
export async function pruneSiteTls(context: SiteContext, site: SiteResource, tls: SiteTls): Promise<void> {
  if ('apiMissing' in tls.certificates) return;
  try {
    await pruneCertificates(context, site, tls.wanted);
  } catch (err) {
    if (!(err instanceof CertificateApiMissing)) throw err;
  }
}
