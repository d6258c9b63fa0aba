import type { V1Ingress } from '@kubernetes/client-node';
import type { SiteResource } from '../../src/kube/index.js';
import type { Informer } from '../runtime/informer.js';
import type { ControllerContext } from '../runtime/setup.js';

/** What every part of the Site controller works with. */
export type SiteContext = Pick<ControllerContext, 'config' | 'platform' | 'clients' | 'events'> & {
  /** The Site cache (read, never written): the reconciler's view of the cluster. */
  sites: Pick<Informer<SiteResource>, 'get' | 'list'>;
  /** The cache of the Ingresses this controller made (by their managed-by label). */
  ingresses: Pick<Informer<V1Ingress>, 'get'>;
};

/** While the Forms and SqliteDatabases of a deleted Site finish their own finalizers. */
export const DEPENDENTS_RETRY_MS = 3_000;

/** The Ingress of a Site: one per Site, named after it. */
export const ingressNameFor = (siteName: string): string => `site-${siteName}`.slice(0, 253);
/** The Secret holding the first API key of a site adopted from a Site resource. */
export const keySecretNameFor = (siteName: string): string => `site-${siteName}-api-key`.slice(0, 253);
