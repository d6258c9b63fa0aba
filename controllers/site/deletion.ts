import {
  type FormResource,
  isNotFound,
  type ResourceClient,
  type SiteResource,
  type SqliteDatabaseResource,
} from '../../src/kube/index.js';
import type { Cleanup } from '../runtime/reconcile.js';
import { DEPENDENTS_RETRY_MS, keySecretNameFor, type SiteContext } from './context.js';
import { deleteSiteCertificates } from './certificates.js';
import { deleteSiteHttpRoute } from './httproute.js';
import { deleteSiteIngress } from './ingress.js';
import { trackSiteCertificates } from './metrics.js';
import { removeStaleRouting } from './routing-switch.js';

/**
 * Behind the finalizer of a deleted Site: stop routing first (Ingress or HTTPRoute and its Gateway
 * listeners), then its Certificates with their Secrets, then the data. Retain
 * detaches the site (routing only); Delete removes the site with its files, forms and databases.
 * Only the site this resource controls is touched; a refused resource (taken slug, claimed site)
 * owns nothing.
 */
export async function cleanUpSite(context: SiteContext, site: SiteResource): Promise<Cleanup<SiteResource>> {
  const { platform, clients, events } = context;
  const policy = site.spec.deletionPolicy ?? 'Retain';
  if (context.config.kubernetes.routing?.mode === 'gateway') await deleteSiteHttpRoute(context, site);
  else await deleteSiteIngress(context, site);
  // What a previous routing mode left (its listeners on a Gateway no owner reference clears).
  await removeStaleRouting(context, site);
  await deleteSiteCertificates(context, site);
  trackSiteCertificates(site.metadata.uid ?? site.metadata.name, []);

  const controlled = await platform.siteRoutingOfResource(site.metadata.uid ?? '');
  if (controlled && policy === 'Delete') {
    // Forms and SqliteDatabases go first, through their own finalizers, while the site's rows
    // still exist; the site is deleted once none is left.
    if ((await deleteDependents(context, site)) > 0) return { requeueAfterMs: DEPENDENTS_RETRY_MS };
    await platform.deleteSite(controlled.siteId);
  } else if (controlled) {
    await platform.detachSite(controlled.siteId);
  }
  // The adoption key is kept only with the site it opens (Retain); otherwise it opens nothing.
  if (!controlled || policy === 'Delete') {
    try {
      await clients.core.deleteNamespacedSecret({
        name: keySecretNameFor(site.metadata.name),
        namespace: clients.namespace,
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  if (controlled) {
    events.normal(
      site,
      policy === 'Delete' ? 'Deleted' : 'Detached',
      policy === 'Delete'
        ? `removed site ${controlled.siteId} with its files, forms and databases`
        : `removed the routing of site ${controlled.siteId}; its files, forms and databases are kept`,
    );
  }
  return { release: site };
}

/** Deletes the Forms and SqliteDatabases that name this Site; returns how many still exist. */
async function deleteDependents(context: SiteContext, site: SiteResource): Promise<number> {
  const dependents: ResourceClient<FormResource | SqliteDatabaseResource>[] = [
    context.clients.forms,
    context.clients.sqliteDatabases,
  ];
  let remaining = 0;
  for (const client of dependents) {
    for (const item of await client.list()) {
      if (item.spec.siteRef?.name !== site.metadata.name) continue;
      remaining++;
      if (item.metadata.deletionTimestamp) continue; // already going
      try {
        await client.delete(item.metadata.name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }
  return remaining;
}
