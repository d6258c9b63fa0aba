import type { KubernetesObject } from '@kubernetes/client-node';
import type { SiteResource } from '../../src/kube/index.js';
import type { Informer } from '../runtime/informer.js';
import type { ControllerContext } from '../runtime/setup.js';
import type { Logger } from 'pino';
import type { OwnedMetadata } from './owned.js';

/** What every part of the Site controller works with. */
export type SiteContext = Pick<ControllerContext, 'config' | 'platform' | 'clients' | 'events'> & {
  /** The Site cache (read, never written): the reconciler's view of the cluster. */
  sites: Pick<Informer<SiteResource>, 'get' | 'list'>;
  /**
   * The cache of the routing objects this controller made (by their managed-by label): Ingresses,
   * or HTTPRoutes with HOSTPLANE_ROUTING_MODE=gateway.
   */
  routes: Pick<Informer<KubernetesObject>, 'get'>;
  /**
   * The cache of the Certificates this controller made, when an issuer is configured. It runs
   * beside the shared informers (a missing cert-manager CRD must not hold the controllers back):
   * until it has synced, the API server is asked.
   */
  certificates?: Pick<Informer<CertificateObject>, 'list' | 'hasSynced'>;
  /** What a previous routing mode left (routing-switch.ts); without it, nothing is looked for. */
  staleRouting?: StaleRoutingObjects;
};

/** A routing object (Ingress, HTTPRoute) as the controller reads its ownership. */
export type RoutingObject = KubernetesObject & { metadata?: KubernetesObject['metadata'] & OwnedMetadata };

/** The routing objects of the other mode, by Site (routing-switch.ts: StaleRouting). */
export interface StaleRoutingObjects {
  /** The kind the other mode makes. */
  readonly kind: 'Ingress' | 'HTTPRoute';
  readonly logger: Logger;
  /** Those named for `site` that it controls. */
  of(site: SiteResource): Promise<RoutingObject[]>;
  /** The Site's are gone. */
  forget(site: SiteResource): Promise<void>;
}

/** While the Forms and SqliteDatabases of a deleted Site finish their own finalizers. */
export const DEPENDENTS_RETRY_MS = 3_000;

/** The Ingress (or HTTPRoute) of a Site: one per Site, named after it. */
export const ingressNameFor = (siteName: string): string => `site-${siteName}`.slice(0, 253);
/** The Secret holding the first API key of a site adopted from a Site resource. */
export const keySecretNameFor = (siteName: string): string => `site-${siteName}-api-key`.slice(0, 253);

/** The hosts a Site answers on, and the TLS Secret of each host that has one. */
export interface SiteHosts {
  slugHost: string;
  /** The routed (verified, not taken) custom domains. */
  domains: string[];
  secrets: Map<string, string>;
}

/** The cert-manager Certificate as this controller reads it (only the fields it uses). */
export interface CertificateObject extends KubernetesObject {
  metadata?: KubernetesObject['metadata'] & OwnedMetadata;
  spec?: { secretName?: string; dnsNames?: string[] };
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    notAfter?: string;
    lastFailureTime?: string;
  };
}
