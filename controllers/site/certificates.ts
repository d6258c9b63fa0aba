import { PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { isNotFound, type SiteResource, type SiteSpec } from '../../src/kube/index.js';
import { CONTROLLER_NAME } from '../runtime/setup.js';
import type { CertificateObject, SiteContext } from './context.js';
import { isControlledBy, siteObjectLabels, siteOwnerReference } from './owned.js';

/**
 * cert-manager Certificates for a Site's hosts, made directly (not through ingress-shim
 * annotations), so that they work alike behind an Ingress and a Gateway, and each domain has a
 * Certificate (and Secret) of its own that comes and goes with it: one per verified, routed custom
 * domain, and one for the slug host when no wildcard Secret covers it. The issuer is the Site's
 * spec.tls, else the controller's (HOSTPLANE_TLS_ISSUER_*); with neither, no Certificates.
 */

export const CERTIFICATE_API_VERSION = 'cert-manager.io/v1';
export const CERTIFICATE_KIND = 'Certificate';

export interface Issuer {
  kind: 'ClusterIssuer' | 'Issuer';
  name: string;
}

/** One Certificate the Site should have. */
export interface WantedCertificate {
  host: string;
  /** Both the Certificate's name and its Secret's: stable, DNS-safe, unique per Site and host. */
  name: string;
  secretName: string;
}

/** `tls-<host, cut>-<hash of site and host>`: at most 55 characters (cert-manager puts it in labels). */
export function certificateNameFor(siteName: string, host: string): string {
  const hash = createHash('sha256').update(`${siteName}/${host}`).digest('hex').slice(0, 10);
  const stem = host
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 40)
    .replace(/^-+|-+$/g, '');
  return `tls-${stem}-${hash}`;
}

export function issuerFor(context: SiteContext, spec: SiteSpec): Issuer | undefined {
  if (spec.tls) return { kind: spec.tls.issuerKind, name: spec.tls.issuerName };
  return context.config.kubernetes.tls?.issuer;
}

/** The hosts that get a Certificate: routed custom domains, and the slug host without a wildcard. */
export function wantedCertificates(
  context: SiteContext,
  site: SiteResource,
  slugHost: string,
  domains: readonly string[],
  issuer: Issuer | undefined,
): WantedCertificate[] {
  if (!issuer) return [];
  const hosts = [...(context.config.kubernetes.tls?.wildcardSecret ? [] : [slugHost]), ...domains];
  return hosts.map((host) => {
    const name = certificateNameFor(site.metadata.name, host);
    return { host, name, secretName: name };
  });
}

/** The cert-manager API is not served (its CRDs are not installed). */
export class CertificateApiMissing extends Error {
  constructor(cause: unknown) {
    super(
      `the ${CERTIFICATE_API_VERSION} Certificate API is not served: install cert-manager and its CRDs (${String(
        (cause as Error)?.message ?? cause,
      )})`,
    );
    this.name = 'CertificateApiMissing';
  }
}

/** A 404 of the API group or an unknown kind: the CRD is not installed. */
export function isApiMissing(err: unknown): boolean {
  return isNotFound(err) || (err instanceof Error && /Unrecognized API version and kind/.test(err.message));
}

/**
 * Server-side applies the wanted Certificates. Returns them as they now are, by host. Throws
 * CertificateApiMissing without the CRD. Those the Site no longer wants are left for
 * pruneCertificates, once the route has stopped naming their Secrets.
 */
export async function applyCertificates(
  context: SiteContext,
  site: SiteResource,
  wanted: readonly WantedCertificate[],
  issuer: Issuer | undefined,
): Promise<Map<string, CertificateObject>> {
  const current = new Map<string, CertificateObject>();
  if (!issuer) return current;
  try {
    for (const certificate of wanted) {
      current.set(certificate.host, await applyCertificate(context, site, certificate, issuer));
    }
  } catch (err) {
    if (isApiMissing(err)) throw new CertificateApiMissing(err);
    throw err;
  }
  return current;
}

/**
 * Deletes this Site's Certificates that are not wanted, with their Secrets (cert-manager leaves a
 * Secret behind unless it runs with --enable-certificate-owner-ref). Only after the Ingress or
 * HTTPRoute (and the Gateway's listeners) stopped naming those Secrets: Traefik drops a whole
 * Ingress whose tls names a missing Secret, the Site's other hosts with it.
 */
export async function pruneCertificates(
  context: SiteContext,
  site: SiteResource,
  wanted: readonly WantedCertificate[],
): Promise<void> {
  if (wanted.length === 0 && !(await hasAnyCertificate(context, site))) return;
  const keep = new Set(wanted.map((c) => c.name));
  try {
    for (const stale of await listSiteCertificates(context, site)) {
      if (!keep.has(stale.metadata?.name ?? '')) await deleteCertificate(context, stale);
    }
  } catch (err) {
    if (isApiMissing(err)) throw new CertificateApiMissing(err);
    throw err;
  }
}

/** Deletes every Certificate of the Site and its Secret (a deleted Site; tolerates a missing CRD). */
export async function deleteSiteCertificates(context: SiteContext, site: SiteResource): Promise<void> {
  try {
    for (const certificate of await listSiteCertificates(context, site)) {
      await deleteCertificate(context, certificate);
    }
  } catch (err) {
    if (!isApiMissing(err)) throw err;
  }
}

async function applyCertificate(
  context: SiteContext,
  site: SiteResource,
  wanted: WantedCertificate,
  issuer: Issuer,
): Promise<CertificateObject> {
  const labels = siteObjectLabels(site);
  const certificate = {
    apiVersion: CERTIFICATE_API_VERSION,
    kind: CERTIFICATE_KIND,
    metadata: {
      name: wanted.name,
      namespace: context.clients.namespace,
      labels,
      ownerReferences: [siteOwnerReference(site)],
    },
    spec: {
      secretName: wanted.secretName,
      dnsNames: [wanted.host],
      issuerRef: { group: 'cert-manager.io', kind: issuer.kind, name: issuer.name },
      // The Secret carries the Site's labels, so that it is known as this Site's.
      secretTemplate: { labels },
    },
  };
  return context.clients.objects.patch(
    certificate as KubernetesObject,
    undefined,
    undefined,
    CONTROLLER_NAME,
    true,
    PatchStrategy.ServerSideApply,
  ) as Promise<CertificateObject>;
}

/** This Site's Certificates: from the informer's cache when it runs, else from the API server. */
async function listSiteCertificates(context: SiteContext, site: SiteResource): Promise<CertificateObject[]> {
  const cache = context.certificates;
  const all = cache?.hasSynced()
    ? cache.list()
    : (
        await context.clients.objects.list<CertificateObject>(
          CERTIFICATE_API_VERSION,
          CERTIFICATE_KIND,
          context.clients.namespace,
          undefined,
          undefined,
          undefined,
          undefined,
          Object.entries(siteObjectLabels(site))
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
        )
      ).items;
  return all.filter((c) => isControlledBy(c.metadata, site));
}

/** Whether the Site may have Certificates to remove (its status names one); saves calls otherwise. */
async function hasAnyCertificate(context: SiteContext, site: SiteResource): Promise<boolean> {
  if (site.status?.certificate || site.status?.domains?.some((d) => d.certificate)) return true;
  const cache = context.certificates;
  return cache?.hasSynced() ? cache.list().some((c) => isControlledBy(c.metadata, site)) : false;
}

async function deleteCertificate(context: SiteContext, certificate: CertificateObject): Promise<void> {
  const { namespace } = context.clients;
  const name = certificate.metadata?.name ?? '';
  try {
    await context.clients.objects.delete({
      apiVersion: CERTIFICATE_API_VERSION,
      kind: CERTIFICATE_KIND,
      metadata: { name, namespace },
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  // Only the Secret this controller named (the same name as its Certificate), never another.
  const secretName = certificate.spec?.secretName;
  if (secretName !== name) return;
  try {
    await context.clients.core.deleteNamespacedSecret({ name: secretName, namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
