import type { Config } from '../config/index.js';
import { tallyCounter } from '../observability/index.js';
import type { Platform, SiteEvents } from '../platform/index.js';
import { GroupedCache } from './grouped-cache.js';
import { preflightHostLookups } from './metrics.js';

/** Known site hosts: a slug or domain change drops them all (NOTIFY); this is the safety net. */
const KNOWN_MAX_AGE_MS = 60_000;
/** Unknown hosts: a new site is not announced, so it is granted within this long (as the edge's). */
const UNKNOWN_MAX_AGE_MS = 2_000;
/** Bounds memory, as the token grants: the oldest entry goes first beyond this many hosts. */
const MAX_ENTRIES = 10_000;
/** Every host is one group: routing changes are rare and drop every answer. */
const ALL = 0;

const hits = tallyCounter(preflightHostLookups, { result: 'hit' });

/**
 * Whether a host is a site's (its subdomain or a custom domain), for the CORS preflight, which
 * carries no credential: answered from memory after the first lookup, negative answers included,
 * and one lookup at a time per host, so repeated preflights cost PostgreSQL nothing. A slug or
 * domain change drops every answer (NOTIFY, on every replica); a created site is not announced, so
 * an unknown host is asked again after two seconds.
 */
export class SiteHosts {
  /** `until`: a negative answer's own, shorter life. */
  private readonly answers = new GroupedCache<{ site: boolean; until: number }>({
    maxEntries: MAX_ENTRIES,
    maxAgeMs: KNOWN_MAX_AGE_MS,
  });
  private readonly pending = new Map<string, Promise<boolean>>();
  private readonly sitesSuffix: string;
  private readonly stops: Array<() => void> = [];

  constructor(
    private readonly deps: {
      config: Pick<Config, 'sitesDomain'>;
      platform: Pick<Platform, 'siteBySlug' | 'siteByCustomDomain'>;
    },
  ) {
    this.sitesSuffix = `.${deps.config.sitesDomain.toLowerCase()}`;
  }

  /** Subscribes to the changes that alter which hosts are sites (every replica calls this at start). */
  listen(events: SiteEvents): void {
    this.stops.push(
      events.subscribe({
        routesChanged: () => this.answers.forgetAll(),
        siteRemoved: () => this.answers.forgetAll(),
        missed: () => this.answers.forgetAll(),
      }),
    );
  }

  close(): void {
    for (const stop of this.stops.splice(0)) stop();
    this.answers.forgetAll();
  }

  /** Whether `host` (lower case, as `originHost` gives it) is a site's host. */
  isSiteHost(host: string): Promise<boolean> {
    const now = Date.now();
    const kept = this.answers.get(host, now);
    if (kept && kept.until > now) return (hits.inc(), Promise.resolve(kept.site));
    const inFlight = this.pending.get(host);
    if (inFlight) return (hits.inc(), inFlight);
    preflightHostLookups.inc({ result: 'miss' });
    const lookup = this.answers
      .load(
        host,
        () => this.read(host),
        () => ALL,
      )
      .then((answer) => answer.site)
      .finally(() => this.pending.delete(host));
    this.pending.set(host, lookup);
    return lookup;
  }

  private async read(host: string): Promise<{ site: boolean; until: number }> {
    const loadedAt = Date.now();
    let site: boolean;
    if (host.endsWith(this.sitesSuffix)) {
      const slug = host.slice(0, -this.sitesSuffix.length);
      site = !slug.includes('.') && (await this.deps.platform.siteBySlug(slug)) !== undefined;
    } else site = (await this.deps.platform.siteByCustomDomain(host)) !== undefined;
    return { site, until: site ? Infinity : loadedAt + UNKNOWN_MAX_AGE_MS };
  }
}
