import type { FormsService } from '../../src/forms/index.js';
import {
  createFormResource,
  FORM_ID_ANNOTATION,
  type FormResource,
  type ResourceClient,
  type SiteResource,
} from '../../src/kube/index.js';

/**
 * The database → cluster half of the two-way sync: every form that no live Form resource
 * controls or names (its API-side apply failed, or it predates cluster mode) gets one, when its
 * site has a Site resource (a detached site has none, and its forms get none). The database is
 * read before the caches, so a resource created meanwhile is already cached; a form deleted
 * meanwhile is looked up once more right before its resource would be created. Returns how many
 * resources it created.
 */
export async function createMissingFormResources(
  forms: FormsService,
  resources: ResourceClient<FormResource>,
  cached: { forms: () => readonly FormResource[]; sites: () => readonly SiteResource[] },
  stopped: () => boolean = () => false,
): Promise<number> {
  const databaseForms = await forms.listLinks();
  const existing = cached.forms();
  const liveUids = new Set(existing.map((f) => f.metadata.uid));
  const annotatedIds = new Set(existing.map((f) => f.metadata.annotations?.[FORM_ID_ANNOTATION]));
  const siteResourceOf = new Map<number, SiteResource>();
  for (const site of cached.sites()) {
    // The site the controller reports this Site controls (a refused copy reports none).
    const siteId = site.status?.siteId;
    if (siteId !== undefined && !site.metadata.deletionTimestamp) siteResourceOf.set(siteId, site);
  }
  let created = 0;
  for (const form of databaseForms) {
    if (stopped()) break;
    if (annotatedIds.has(String(form.id))) continue;
    if (form.resourceUid !== null && liveUids.has(form.resourceUid)) continue;
    const site = siteResourceOf.get(form.siteId);
    if (!site) continue;
    const current = await forms.byId(form.id);
    if (!current || current.resourceUid !== form.resourceUid) continue;
    const result = await createFormResource(resources, {
      formId: current.id,
      siteResourceName: site.metadata.name,
      siteSlug: site.spec.slug,
      formSlug: current.slug,
      name: current.name,
      active: current.isActive,
      notificationEmail: current.notificationEmail,
    });
    if (result.result === 'created') created++;
  }
  return created;
}
