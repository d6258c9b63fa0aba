import type { Config } from '../config/index.js';
import { hostOrigin } from '../http/index.js';
import type { Platform } from '../platform/index.js';

/**
 * The origins a site's pages are served from: its subdomain and its custom domains, with the
 * scheme and port of the public base URL. Computed at each use, so a renamed slug or an attached
 * or removed domain applies at once, to every token (spec 2.10: "rebuilt automatically").
 */
export async function siteOrigins(
  config: Pick<Config, 'baseUrl' | 'sitesDomain'>,
  platform: Platform,
  siteId: number,
) {
  const routing = await platform.siteRouting(siteId);
  if (!routing || routing.detached) return [];
  const hosts = [`${routing.slug}.${config.sitesDomain}`, ...routing.customDomains];
  return hosts.map((host) => hostOrigin(config.baseUrl, host));
}
