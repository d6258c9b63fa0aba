import type { Config } from '../config/index.js';
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
  const base = new URL(config.baseUrl);
  const port = base.port ? `:${base.port}` : '';
  const hosts = [`${routing.slug}.${config.sitesDomain}`, ...routing.customDomains];
  return hosts.map((host) => `${base.protocol}//${host.toLowerCase()}${port}`);
}

/** Whether `origin` (the request's header, as sent) is one of `allowed`. */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (!origin) return false;
  let normalised: string;
  try {
    normalised = new URL(origin).origin;
  } catch {
    return false;
  }
  return allowed.includes(normalised);
}
