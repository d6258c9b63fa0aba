import { isConflict } from './api-client.js';
import { SITE_ID_ANNOTATION } from './client.js';
import type { ResourceClient } from './resource-client.js';
import type { SiteResource } from './resource-kinds.js';

/**
 * Creates the Site resource of a database site (annotated with its id, so the controller links
 * rather than adopts it). An existing resource of that name is left alone: whoever applied it
 * owns it, and the controller reports any mismatch in its status.
 */
export async function createSiteResource(
  resources: ResourceClient<SiteResource>,
  site: { name: string; siteId: number; slug: string; customDomains?: string[] },
): Promise<'created' | 'exists'> {
  try {
    await resources.create({
      metadata: { name: site.name, annotations: { [SITE_ID_ANNOTATION]: String(site.siteId) } },
      spec: {
        slug: site.slug,
        ...(site.customDomains?.length ? { customDomains: site.customDomains } : {}),
        deletionPolicy: 'Retain',
      },
    });
    return 'created';
  } catch (err) {
    if (isConflict(err)) return 'exists';
    throw err;
  }
}
