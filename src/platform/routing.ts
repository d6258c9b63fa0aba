import { and, asc, eq, inArray, isNull, type SQL } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { customDomains, sites } from './tables.js';
import { notifySiteEvent } from './site-events.js';

export interface SiteRouting {
  siteId: number;
  slug: string;
  detached: boolean;
  /** The Site resource that controls the site (cluster mode), if any. */
  resourceUid: string | null;
  customDomains: string[];
}

export interface DomainRouting {
  hostname: string;
  /** False when another site holds the hostname. */
  routed: boolean;
}

export interface RoutingResult {
  /** The slug the site now has (the old one when the wanted slug is taken). */
  slug: string;
  slugApplied: boolean;
  domains: DomainRouting[];
  changed: boolean;
}

/** Cluster mode: the Site resource's routing (slug, custom domains, claim) mirrored into the database. */
export class Routing {
  constructor(private readonly db: Db) {}

  /** Every site with its routing, for the controller's two-way resync. */
  async listSiteRouting(): Promise<SiteRouting[]> {
    return this.routingWhere(undefined);
  }

  async siteRouting(siteId: number): Promise<SiteRouting | undefined> {
    return (await this.routingWhere(eq(sites.id, siteId)))[0];
  }

  /** The site with `slug`, attached or detached. */
  async siteRoutingBySlug(slug: string): Promise<SiteRouting | undefined> {
    return (await this.routingWhere(eq(sites.slug, slug)))[0];
  }

  /** The site a Site resource (by uid) controls. */
  async siteRoutingOfResource(resourceUid: string): Promise<SiteRouting | undefined> {
    return (await this.routingWhere(eq(sites.resourceUid, resourceUid)))[0];
  }

  /**
   * The host names the account's sites answer on: each attached site's subdomain host (under
   * `sitesDomain`) and its custom domains. The origins a form accepts submissions from.
   */
  async accountHosts(accountId: number, sitesDomain: string): Promise<string[]> {
    const rows = await dbOp('account_hosts', () =>
      this.db
        .select({ slug: sites.slug, hostname: customDomains.hostname })
        .from(sites)
        .leftJoin(customDomains, eq(customDomains.siteId, sites.id))
        .where(and(eq(sites.accountId, accountId), isNull(sites.detachedAt))),
    );
    const hosts = new Set<string>();
    for (const row of rows) {
      hosts.add(`${row.slug}.${sitesDomain}`.toLowerCase());
      if (row.hostname) hosts.add(row.hostname.toLowerCase());
    }
    return [...hosts];
  }

  private async routingWhere(where: SQL | undefined): Promise<SiteRouting[]> {
    const rows = await dbOp('site_routing', () =>
      this.db
        .select({
          id: sites.id,
          slug: sites.slug,
          detachedAt: sites.detachedAt,
          resourceUid: sites.resourceUid,
          hostname: customDomains.hostname,
        })
        .from(sites)
        .leftJoin(customDomains, eq(customDomains.siteId, sites.id))
        .where(where)
        .orderBy(asc(sites.id), asc(customDomains.hostname)),
    );
    const byId = new Map<number, SiteRouting>();
    for (const row of rows) {
      let site = byId.get(row.id);
      if (!site) {
        site = {
          siteId: row.id,
          slug: row.slug,
          detached: row.detachedAt !== null,
          resourceUid: row.resourceUid,
          customDomains: [],
        };
        byId.set(row.id, site);
      }
      if (row.hostname) site.customDomains.push(row.hostname);
    }
    return [...byId.values()];
  }

  /**
   * Records that the Site resource `resourceUid` controls the site. Succeeds when the site is
   * unclaimed, already claimed by it, or claimed by a resource that no longer exists
   * (`isLiveResource` false: deleted without its finalizer running); refuses otherwise, so a
   * copied annotation cannot take a site over.
   */
  async claimSite(
    siteId: number,
    resourceUid: string,
    isLiveResource: (uid: string) => boolean,
  ): Promise<'claimed' | 'claimed_elsewhere' | 'missing'> {
    return dbOp('claim_site', () =>
      this.db.transaction(async (tx) => {
        const [site] = await tx.select().from(sites).where(eq(sites.id, siteId)).for('update');
        if (!site) return 'missing';
        if (site.resourceUid === resourceUid) return 'claimed';
        if (site.resourceUid !== null && isLiveResource(site.resourceUid)) return 'claimed_elsewhere';
        await tx.update(sites).set({ resourceUid }).where(eq(sites.id, siteId));
        return 'claimed';
      }),
    );
  }

  /**
   * Makes the database route `slug` and exactly `customDomains` to the site (and re-attaches a
   * detached site). A slug or hostname held by another site is refused, not taken over: the
   * result says which. Edges drop their host caches when anything changed.
   */
  async applyRouting(siteId: number, slug: string, wanted: readonly string[]): Promise<RoutingResult> {
    return dbOp('apply_routing', () =>
      this.db.transaction(async (tx) => {
        const [site] = await tx.select().from(sites).where(eq(sites.id, siteId)).for('update');
        if (!site) throw new AppError('UNKNOWN_SITE', { siteId });
        let changed = site.detachedAt !== null;
        let slugApplied = site.slug === slug;
        if (!slugApplied) {
          const [holder] = await tx.select({ id: sites.id }).from(sites).where(eq(sites.slug, slug));
          if (!holder) {
            await tx.update(sites).set({ slug }).where(eq(sites.id, siteId));
            slugApplied = true;
            changed = true;
          }
        }
        if (site.detachedAt !== null)
          await tx.update(sites).set({ detachedAt: null }).where(eq(sites.id, siteId));

        const wantedSet = new Set(wanted);
        const current = await tx.select().from(customDomains).where(eq(customDomains.siteId, siteId));
        const stale = current.filter((d) => !wantedSet.has(d.hostname)).map((d) => d.hostname);
        if (stale.length > 0) {
          await tx
            .delete(customDomains)
            .where(and(eq(customDomains.siteId, siteId), inArray(customDomains.hostname, stale)));
          changed = true;
        }
        const domains: DomainRouting[] = [];
        for (const hostname of wantedSet) {
          const inserted = await tx
            .insert(customDomains)
            .values({ hostname, siteId })
            .onConflictDoNothing()
            .returning({ hostname: customDomains.hostname });
          if (inserted.length > 0) changed = true;
          const [owner] = await tx
            .select({ siteId: customDomains.siteId })
            .from(customDomains)
            .where(eq(customDomains.hostname, hostname));
          domains.push({ hostname, routed: owner?.siteId === siteId });
        }
        if (changed) await tx.execute(notifySiteEvent({ kind: 'routes' }));
        return { slug: slugApplied ? slug : site.slug, slugApplied, domains, changed };
      }),
    );
  }
}
