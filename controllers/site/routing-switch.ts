import type { Logger } from 'pino';
import { apiStatus, MANAGED_BY_LABEL, type SiteResource } from '../../src/kube/index.js';
import { CONTROLLER_NAME } from '../runtime/setup.js';
import { isApiMissing } from './certificates.js';
import { ingressNameFor, type RoutingObject, type SiteContext, type StaleRoutingObjects } from './context.js';
import {
  deleteSiteHttpRoute,
  GATEWAY_API_VERSION,
  httpRouteNameFor,
  listenerGatewayOf,
} from './httproute.js';
import { deleteSiteIngress } from './ingress.js';
import { staleRoutingRemoved } from './metrics.js';
import { isControlledBy } from './owned.js';

/**
 * A switch of HOSTPLANE_ROUTING_MODE (`helm upgrade --set routing.mode=…`) restarts the controller
 * in the new mode: each Site is given the new kind of routing object, and the one the old mode
 * made (its Ingress; or its HTTPRoutes with the Gateway listeners the controller added) would keep
 * routing through the old path, never updated again. Once the new one is applied, the old one
 * goes: removeStaleRouting, the same deletions as when a Site is deleted.
 *
 * Cost: the informers watch the current mode's kind only, and the other kind is only ever made by
 * a controller in the other mode, so by a process that led before this one. One LIST of the other
 * kind (by the managed-by label) per leadership therefore tells every Site whether it has one:
 * nothing more per pass for the Sites without one; a Site with one costs a GET and a DELETE per
 * object (and the Gateway's listeners: a GET and an apply), once.
 */
export class StaleRouting implements StaleRoutingObjects {
  /** The kind the other mode makes. */
  readonly kind: 'Ingress' | 'HTTPRoute';
  private listing: Promise<Map<string, RoutingObject>> | undefined;

  constructor(
    private readonly context: Pick<SiteContext, 'config' | 'clients'>,
    readonly logger: Logger,
  ) {
    this.kind = context.config.kubernetes.routing?.mode === 'gateway' ? 'Ingress' : 'HTTPRoute';
  }

  /** The objects of the other kind named for `site` that it controls: never another's. */
  async of(site: SiteResource): Promise<RoutingObject[]> {
    const listing = (this.listing ??= this.list());
    let byName: Map<string, RoutingObject>;
    try {
      byName = await listing;
    } catch (err) {
      if (this.listing === listing) this.listing = undefined; // the next pass lists again
      throw err;
    }
    return this.namesOf(site)
      .map((name) => byName.get(name))
      .filter((o): o is RoutingObject => o !== undefined && isControlledBy(o.metadata, site));
  }

  /** The Site's objects are gone: later passes find nothing (no call). */
  async forget(site: SiteResource): Promise<void> {
    const byName = await this.listing;
    for (const name of this.namesOf(site)) byName?.delete(name);
  }

  private namesOf(site: SiteResource): string[] {
    const name = site.metadata.name;
    return this.kind === 'Ingress' ? [ingressNameFor(name)] : [ingressNameFor(name), httpRouteNameFor(name)];
  }

  private async list(): Promise<Map<string, RoutingObject>> {
    const { clients } = this.context;
    const { namespace } = clients;
    const labelSelector = `${MANAGED_BY_LABEL}=${CONTROLLER_NAME}`;
    try {
      const items: RoutingObject[] =
        this.kind === 'Ingress'
          ? (await clients.networking.listNamespacedIngress({ namespace, labelSelector })).items
          : (
              await clients.objects.list<RoutingObject>(
                GATEWAY_API_VERSION,
                'HTTPRoute',
                namespace,
                undefined,
                undefined,
                undefined,
                undefined,
                labelSelector,
              )
            ).items;
      return new Map(items.map((o) => [o.metadata?.name ?? '', o]));
    } catch (err) {
      // Without the Gateway API's CRDs there is no HTTPRoute to remove.
      if (isApiMissing(err)) return new Map();
      if (apiStatus(err) === 403) {
        this.logger.warn(
          { err, kind: this.kind },
          `may not list ${this.kind}s: those a previous routing mode left are not removed`,
        );
        return new Map();
      }
      throw err;
    }
  }
}

/**
 * Removes what the other routing mode left for this Site, if anything; called once the current
 * mode's route is applied (never before: no gap in routing). A failure is reported (log, Warning
 * Event) and does not fail the pass: returns false, and the caller looks again shortly.
 */
export async function removeStaleRouting(context: SiteContext, site: SiteResource): Promise<boolean> {
  const stale = context.staleRouting;
  if (!stale) return true;
  let objects: RoutingObject[] = [];
  try {
    objects = await stale.of(site);
    if (objects.length === 0) return true;
    if (stale.kind === 'Ingress') {
      await deleteSiteIngress(context, site);
    } else {
      const namespace = context.clients.namespace;
      const gateway = objects.map((o) => listenerGatewayOf(o, namespace)).find((g) => g !== undefined);
      await deleteSiteHttpRoute(context, site, gateway);
    }
    await stale.forget(site);
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    const what = objects.length > 0 ? describe(stale.kind, objects) : `its ${stale.kind}s`;
    stale.logger.warn(
      { err, site: site.metadata.name },
      'could not remove a previous routing mode’s objects',
    );
    context.events.warning(
      site,
      'StaleRoutingNotRemoved',
      `${what}, left by the previous routing mode, could not be removed (tried again): ${message}`,
    );
    return false;
  }
  staleRoutingRemoved.inc({ kind: stale.kind }, objects.length);
  context.events.normal(
    site,
    'StaleRoutingRemoved',
    `removed ${describe(stale.kind, objects)}, left by the previous routing mode` +
      (stale.kind === 'HTTPRoute' ? ' (and its Gateway listeners)' : ''),
  );
  return true;
}

const describe = (kind: string, objects: RoutingObject[]): string =>
  `${kind} ${objects.map((o) => o.metadata?.name).join(', ')}`;
