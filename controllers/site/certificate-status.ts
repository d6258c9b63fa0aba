import type { CertificateStatus, Condition, SiteResource } from '../../src/kube/index.js';
import { condition } from '../runtime/reconcile-helpers.js';
import type { WantedCertificate } from './certificates.js';
import type { CertificateObject, SiteContext } from './context.js';

/** The Site condition that sums up its Certificates (absent when it wants none). */
export const CERTIFICATES_READY = 'CertificatesReady';

/** What the Certificates of one pass came to: by host, or why there are none. */
export type CertificateOutcome =
  { hosts: Map<string, CertificateStatus> } | { apiMissing: string; hosts: Map<string, CertificateStatus> };

/**
 * A Certificate's state from its conditions, as cert-manager writes them: Ready=True is issued;
 * an Issuing condition False with reason Failed (or a lastFailureTime while not Ready) is a failed
 * issuance, which cert-manager retries with back-off; anything else is still being issued.
 */
export function certificateState(
  wanted: WantedCertificate,
  object: CertificateObject | undefined,
): CertificateStatus {
  const base = { name: wanted.name, secretName: wanted.secretName };
  const conditions = object?.status?.conditions ?? [];
  const ready = conditions.find((c) => c.type === 'Ready');
  const issuing = conditions.find((c) => c.type === 'Issuing');
  if (ready?.status === 'True') {
    return {
      ...base,
      state: 'Ready',
      ...(object?.status?.notAfter ? { notAfter: object.status.notAfter } : {}),
    };
  }
  const failedIssuing = issuing?.status === 'False' && issuing.reason === 'Failed';
  if (failedIssuing || (object?.status?.lastFailureTime && issuing?.status !== 'True')) {
    const source = failedIssuing ? issuing : (ready ?? issuing);
    return {
      ...base,
      state: 'Failed',
      reason: source?.reason || 'Failed',
      message: source?.message || 'the last issuance failed; cert-manager retries it',
    };
  }
  return {
    ...base,
    state: 'Pending',
    reason: ready?.reason || 'Issuing',
    message: ready?.message || 'waiting for cert-manager to issue the certificate',
  };
}

/** The CertificatesReady condition for this pass, or undefined when the Site wants no Certificate. */
export function certificatesCondition(
  site: SiteResource,
  outcome: CertificateOutcome,
): Condition | undefined {
  if ('apiMissing' in outcome) {
    return condition(site, CERTIFICATES_READY, 'False', 'CertManagerMissing', outcome.apiMissing);
  }
  const states = [...outcome.hosts.entries()];
  if (states.length === 0) return undefined;
  const failed = states.filter(([, s]) => s.state === 'Failed');
  const pending = states.filter(([, s]) => s.state === 'Pending');
  const describe = (list: typeof states) =>
    list.map(([host, s]) => `${host}: ${s.message ?? s.reason}`).join('; ');
  if (failed.length > 0)
    return condition(site, CERTIFICATES_READY, 'False', 'CertificateFailed', describe(failed));
  if (pending.length > 0)
    return condition(site, CERTIFICATES_READY, 'False', 'CertificatePending', describe(pending));
  return condition(
    site,
    CERTIFICATES_READY,
    'True',
    'CertificatesIssued',
    `${states.length} certificate(s) issued`,
  );
}

/**
 * Events for the hosts whose certificate changed state since the status last said: Issued when it
 * became Ready, Failed when an issuance failed. Once per transition: the status written after this
 * pass is what the next pass compares with (a resync with nothing new records nothing).
 */
export function recordCertificateTransitions(
  context: SiteContext,
  site: SiteResource,
  slugHost: string,
  hosts: Map<string, CertificateStatus>,
): void {
  const previous = new Map<string, CertificateStatus['state']>();
  if (site.status?.certificate) previous.set(slugHost, site.status.certificate.state);
  for (const d of site.status?.domains ?? [])
    if (d.certificate) previous.set(d.hostname, d.certificate.state);
  for (const [host, status] of hosts) {
    if (previous.get(host) === status.state) continue;
    if (status.state === 'Ready') {
      context.events.normal(
        site,
        'CertificateIssued',
        `certificate for ${host} issued (Secret ${status.secretName})${status.notAfter ? `, valid until ${status.notAfter}` : ''}`,
      );
    } else if (status.state === 'Failed') {
      context.events.warning(
        site,
        'CertificateFailed',
        `certificate for ${host}: ${status.reason}: ${status.message}`,
      );
    }
  }
}
