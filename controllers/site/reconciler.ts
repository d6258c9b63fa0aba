import { isConflict, SITE_FINALIZER, type SiteResource, siteSpecSchema } from '../../src/kube/index.js';
import type { ReconcileResult, Reconciler } from '../runtime/controller.js';
import { splitKey } from '../runtime/controller.js';
import { ensureFinalizer, isBeingDeleted } from '../runtime/reconcile-helpers.js';
import { CONFLICT_RETRY_MS, WAITING_RETRY_MS, type SiteContext } from './context.js';
import { linkSite } from './database-link.js';
import { finalizeSite } from './finalizer.js';
import { applySiteIngress } from './ingress.js';
import { writeNotReady, writeRoutedStatus } from './status.js';

/**
 * Drives a Site resource to its state, one concern per module: the site exists in the database
 * (database-link.ts: adopted with a first API key when the resource came first), the database
 * routes its slug and custom domains, one Ingress owned by the Site routes them to the edge
 * (ingress.ts), and the status says how that went (status.ts). Deletion runs behind a finalizer
 * (finalizer.ts). Level-triggered and idempotent: every pass recomputes everything from the
 * resource.
 */
export class SiteReconciler implements Reconciler {
  constructor(private readonly context: SiteContext) {}

  async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const site = this.context.sites.get(namespace, name);
    if (!site) return; // gone; the finalizer already cleaned up
    try {
      if (isBeingDeleted(site)) return await finalizeSite(this.context, site);
      return await this.reconcileLive(site);
    } catch (err) {
      // Someone changed the Site after our cache copy: its watch event is on the way, and the
      // retry reads the new version. Expected under concurrent writers, so not an error.
      if (isConflict(err)) return { requeueAfterMs: CONFLICT_RETRY_MS };
      throw err;
    }
  }

  private async reconcileLive(site: SiteResource): Promise<ReconcileResult | void> {
    const { context } = this;
    // The patch changes the resource; its watch event brings the next pass.
    if (await ensureFinalizer(context.clients.sites, site, SITE_FINALIZER)) return;

    const parsed = siteSpecSchema.safeParse(site.spec);
    if (!parsed.success) {
      const message = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
      await writeNotReady(context, site, 'InvalidSpec', message);
      return;
    }
    const spec = parsed.data;

    const linked = await linkSite(context, site, spec);
    if ('refused' in linked) {
      context.events.warning(site, linked.reason, linked.refused);
      await writeNotReady(context, site, linked.reason, linked.refused);
      return { requeueAfterMs: WAITING_RETRY_MS };
    }
    site = linked.resource;

    const customDomains = spec.customDomains ?? [];
    const rejectedDomains = customDomains.filter((d) => this.isPlatformHost(d));
    const wanted = customDomains.filter((d) => !this.isPlatformHost(d));
    const routing = await context.platform.applyRouting(linked.siteId, spec.slug, wanted);
    if (!routing.slugApplied) {
      context.events.warning(
        site,
        'SlugTaken',
        `slug "${spec.slug}" belongs to another site; keeping "${routing.slug}"`,
      );
    }

    const ingress = await applySiteIngress(context, site, spec, routing);
    if ('refused' in ingress) {
      context.events.warning(site, 'IngressConflict', ingress.refused);
      await writeNotReady(context, site, 'IngressConflict', ingress.refused);
      return { requeueAfterMs: WAITING_RETRY_MS };
    }

    const notReady = await writeRoutedStatus(context, site, {
      siteId: linked.siteId,
      spec,
      routing,
      rejectedDomains,
      ingressName: ingress.name,
      apiKeySecretName: linked.apiKeySecretName,
    });
    // A taken slug or domain may be released later: look again without waiting for the resync.
    return notReady ? { requeueAfterMs: WAITING_RETRY_MS } : undefined;
  }

  /** The API host, the sites domain and `<anything>.<sites domain>` are the platform's own. */
  private isPlatformHost(hostname: string): boolean {
    const { sitesDomain, baseUrl } = this.context.config;
    return (
      hostname === new URL(baseUrl).hostname ||
      hostname === sitesDomain ||
      hostname.endsWith(`.${sitesDomain}`)
    );
  }
}
