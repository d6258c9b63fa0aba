import {
  createSiteResource,
  type ResourceClient,
  SITE_ID_ANNOTATION,
  type SiteResource,
} from '../../src/kube/index.js';
import type { Platform } from '../../src/platform/index.js';

/**
 * The database → cluster half of the two-way sync: every attached site that no Site resource
 * controls or names (created while a resource apply failed, or before cluster mode) gets one.
 * A detached site (its Site deleted with Retain) gets none: deleting the resource was the point.
 * The database is read before the cache, so a site adopted meanwhile is already in the cache.
 * Returns how many resources it created.
 */
export async function createMissingSiteResources(
  platform: Platform,
  sites: ResourceClient<SiteResource>,
  cachedSites: () => readonly SiteResource[],
  stopped: () => boolean = () => false,
): Promise<number> {
  const databaseSites = await platform.listSiteRouting();
  const existing = cachedSites();
  const liveUids = new Set(existing.map((s) => s.metadata.uid));
  const annotatedIds = new Set(existing.map((s) => s.metadata.annotations?.[SITE_ID_ANNOTATION]));
  const names = new Set(existing.map((s) => s.metadata.name));
  let created = 0;
  for (const site of databaseSites) {
    if (stopped()) break;
    if (site.detached || annotatedIds.has(String(site.siteId))) continue;
    if (site.resourceUid !== null && liveUids.has(site.resourceUid)) continue;
    const result = await createSiteResource(sites, {
      name: names.has(site.slug) ? `site-${site.siteId}` : site.slug,
      siteId: site.siteId,
      slug: site.slug,
      customDomains: site.customDomains,
    });
    if (result === 'created') created++;
  }
  return created;
}
