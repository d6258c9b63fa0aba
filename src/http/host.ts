import type { IncomingMessage, ServerResponse } from 'node:http';

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;

/** A Host header's lower-cased hostname without port or trailing dot; undefined unless it is a DNS name. */
export function normalizeHost(hostHeader: string | undefined): string | undefined {
  if (!hostHeader || hostHeader.length > 300) return undefined;
  const hostname = hostHeader
    .replace(/:\d{1,5}$/, '')
    .replace(/\.$/, '')
    .toLowerCase();
  return HOSTNAME.test(hostname) ? hostname : undefined;
}

/** What a Host header means: a site host (served by the edge, site known or not), or anything else. */
export type HostRoute<Site> = { serve: false } | { serve: true; site: Site | undefined };

/** Serves the requests of site hosts, ahead of the API; the edge implements it. */
export interface HostHandler<Site> {
  /** The meaning of a Host header when it is cached (the common case), else undefined. */
  cachedHost(hostHeader: string | undefined): HostRoute<Site> | undefined;
  lookupHost(hostHeader: string | undefined): Promise<HostRoute<Site>>;
  /** Answers a request for a site host (`site` undefined: a sites-domain host that names no site). */
  serve(req: IncomingMessage, res: ServerResponse, site: Site | undefined): void;
}
