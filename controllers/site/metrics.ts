import client from 'prom-client';
import type { CertificateStatus } from '../../src/kube/index.js';
import { registry } from '../../src/observability/index.js';

/** The certificate states of each Site (by uid), as its last pass saw them. */
const statesBySite = new Map<string, CertificateStatus['state'][]>();
const STATES = ['Ready', 'Pending', 'Failed'] as const;

export const siteCertificates = new client.Gauge({
  name: 'hostplane_site_certificates',
  help: 'cert-manager Certificates of Sites (custom domains, slug hosts without a wildcard Secret) by state (ready, pending, failed), as the leading controller last reconciled them.',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    const counts = new Map<string, number>(STATES.map((s) => [s, 0]));
    for (const states of statesBySite.values()) {
      for (const state of states) counts.set(state, (counts.get(state) ?? 0) + 1);
    }
    for (const [state, count] of counts) this.set({ state: state.toLowerCase() }, count);
  },
});

export const staleRoutingRemoved = new client.Counter({
  name: 'hostplane_site_stale_routing_removed_total',
  help: 'Routing objects a previous routing mode left for a Site (Ingress, HTTPRoute), removed after a switch of HOSTPLANE_ROUTING_MODE, by kind.',
  labelNames: ['kind'] as const,
  registers: [registry],
});

/** Records a Site's certificate states (none: forgets it). */
export function trackSiteCertificates(siteUid: string, states: CertificateStatus['state'][]): void {
  if (states.length === 0) statesBySite.delete(siteUid);
  else statesBySite.set(siteUid, states);
}

/** Leadership lost: another process counts now. */
export function forgetSiteCertificates(): void {
  statesBySite.clear();
}
