import { SITE_FINALIZER, siteSpecSchema } from '../../src/kube/index.js';
import type { Reconciler } from '../runtime/controller.js';
import { ResourceReconciler } from '../runtime/reconcile.js';
import type { SiteContext } from './context.js';
import { cleanUpSite } from './deletion.js';
import { orchestrateSite } from './orchestration.js';

/**
 * The Site's parts of the reconcile pass (runtime/reconcile.ts runs them): a live Site is linked
 * to its database site, routed and given its Ingress (orchestration.ts); a deleted one stops
 * routing, then detaches or deletes its site (deletion.ts).
 */
export function siteReconciler(context: SiteContext): Reconciler {
  return new ResourceReconciler({
    cache: context.sites,
    client: context.clients.sites,
    events: context.events,
    finalizer: SITE_FINALIZER,
    specSchema: siteSpecSchema,
    cleanUp: (site) => cleanUpSite(context, site),
    orchestrate: (site, spec) => orchestrateSite(context, site, spec),
  });
}
