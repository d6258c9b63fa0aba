import { and, asc, eq, gt, inArray, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import { dbOp } from '../observability/timing.js';
import type { Db } from '../store/db.js';
import { accountSessions, accounts, apiKeys, customDomains, sites } from '../store/schema.js';
import { planFor, type Plan, type PlanType } from './plans.js';
import { hashSecret, newSecret, secretMatches } from './secrets.js';

export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
export const TEMP_KEY_DEFAULT_SECONDS = 3600;
export const TEMP_KEY_MAX_SECONDS = 86_400;
export const ACCOUNT_SESSION_SECONDS = 24 * 3600;

export interface Site {
  id: number;
  accountId: number;
  slug: string;
  name: string;
  fileCount: number;
  storageBytes: number;
  version: number;
}

export interface SiteUsage {
  site: Site;
  plan: Plan;
}

export interface Principal {
  accountId: number;
  /** The site a key is scoped to; for a session, undefined until resolved per request. */
  siteId: number | undefined;
  via: 'permanent_key' | 'temporary_key' | 'session';
}

/** Thrown for conflicts that the caller maps to its own wording (CLI, HTTP). */
export class PlatformError extends Error {
  constructor(
    readonly code: 'slug_taken' | 'invalid_slug' | 'unknown_account' | 'unknown_site',
    message: string,
  ) {
    super(message);
  }
}

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
type Executor = Db | Tx;

/** Accounts, plans, sites, API keys, account sessions and the per-site usage counters. */
export class Platform {
  constructor(private readonly db: Db) {}

  async createSite(input: {
    email: string;
    slug: string;
    plan: PlanType;
    name?: string | undefined;
    /** A key minted beforehand (cluster adoption keeps it in a Secret first); default: a new one. */
    apiKey?: string | undefined;
    /** Cluster adoption: the uid of the Site resource that controls the new site. */
    resourceUid?: string | undefined;
  }): Promise<{ accountId: number; siteId: number; slug: string; plan: PlanType; apiKey: string }> {
    const email = input.email.trim().toLowerCase();
    if (!SLUG_PATTERN.test(input.slug)) {
      throw new PlatformError(
        'invalid_slug',
        'slug must be 1-63 lower-case letters, digits or hyphens, not starting or ending with a hyphen',
      );
    }
    return dbOp('create_site', () =>
      this.db.transaction(async (tx) => {
        await tx.insert(accounts).values({ email, plan: input.plan }).onConflictDoNothing();
        const [account] = await tx.select().from(accounts).where(eq(accounts.email, email));
        if (!account) throw new Error('account upsert returned no row');
        const [site] = await tx
          .insert(sites)
          .values({
            accountId: account.id,
            slug: input.slug,
            name: input.name ?? input.slug,
            resourceUid: input.resourceUid ?? null,
          })
          .onConflictDoNothing()
          .returning();
        if (!site) throw new PlatformError('slug_taken', `the slug "${input.slug}" is already taken`);
        const apiKey = input.apiKey ?? newApiKey();
        await tx.insert(apiKeys).values({
          siteId: site.id,
          kind: 'permanent',
          keyHash: hashSecret(apiKey),
          keyPrefix: apiKey.slice(0, 12),
        });
        return {
          accountId: account.id,
          siteId: site.id,
          slug: site.slug,
          plan: account.plan as PlanType,
          apiKey,
        };
      }),
    );
  }

  async createSession(email: string): Promise<{ token: string; expiresAt: Date }> {
    const [account] = await this.db
      .select()
      .from(accounts)
      .where(eq(accounts.email, email.trim().toLowerCase()));
    if (!account) throw new PlatformError('unknown_account', `no account with the email ${email}`);
    const token = newSecret('hp_sess_');
    const expiresAt = new Date(Date.now() + ACCOUNT_SESSION_SECONDS * 1000);
    await dbOp('create_session', () =>
      this.db
        .insert(accountSessions)
        .values({ accountId: account.id, tokenHash: hashSecret(token), expiresAt }),
    );
    return { token, expiresAt };
  }

  /** Resolves an `X-API-Key` to its site and account; undefined when unknown, expired or revoked. */
  async authenticateKey(key: string): Promise<Principal | undefined> {
    if (key.length < 16 || key.length > 200) return undefined;
    const hash = hashSecret(key);
    const [row] = await dbOp('authenticate_key', () =>
      this.db
        .select({
          id: apiKeys.id,
          keyHash: apiKeys.keyHash,
          kind: apiKeys.kind,
          siteId: apiKeys.siteId,
          accountId: sites.accountId,
          lastUsedAt: apiKeys.lastUsedAt,
        })
        .from(apiKeys)
        .innerJoin(sites, eq(sites.id, apiKeys.siteId))
        .where(
          and(
            eq(apiKeys.keyHash, hash),
            isNull(apiKeys.revokedAt),
            or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, sql`now()`)),
          ),
        ),
    );
    if (!row || !secretMatches(key, row.keyHash)) return undefined;
    // Recording use at most once a minute keeps authentication a read on the hot path.
    if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > 60_000) {
      await this.db.update(apiKeys).set({ lastUsedAt: new Date() }).where(eq(apiKeys.id, row.id));
    }
    return {
      accountId: row.accountId,
      siteId: row.siteId,
      via: row.kind === 'temporary' ? 'temporary_key' : 'permanent_key',
    };
  }

  /** Resolves a bearer session token to its account. */
  async authenticateSession(token: string): Promise<Principal | undefined> {
    if (token.length < 16 || token.length > 200) return undefined;
    const [row] = await dbOp('authenticate_session', () =>
      this.db
        .select()
        .from(accountSessions)
        .where(
          and(eq(accountSessions.tokenHash, hashSecret(token)), gt(accountSessions.expiresAt, sql`now()`)),
        ),
    );
    if (!row || !secretMatches(token, row.tokenHash)) return undefined;
    return { accountId: row.accountId, siteId: undefined, via: 'session' };
  }

  /** The account's site with `siteId`, or its first site when omitted. */
  async siteOfAccount(accountId: number, siteId?: number): Promise<Site | undefined> {
    const where =
      siteId === undefined
        ? eq(sites.accountId, accountId)
        : and(eq(sites.accountId, accountId), eq(sites.id, siteId));
    const [site] = await this.db.select().from(sites).where(where).orderBy(asc(sites.id)).limit(1);
    return site;
  }

  async createTempKey(siteId: number, expiresInSeconds: number): Promise<{ key: string; expiresAt: Date }> {
    const key = newSecret('hp_temp_');
    const expiresAt = new Date(Date.now() + expiresInSeconds * 1000);
    await dbOp('create_temp_key', () =>
      this.db.insert(apiKeys).values({
        siteId,
        kind: 'temporary',
        keyHash: hashSecret(key),
        keyPrefix: key.slice(0, 12),
        expiresAt,
      }),
    );
    return { key, expiresAt };
  }

  async getSite(siteId: number): Promise<Site | undefined> {
    const [site] = await this.db.select().from(sites).where(eq(sites.id, siteId));
    return site;
  }

  async getUsage(siteId: number): Promise<SiteUsage | undefined> {
    const [row] = await this.db
      .select({ site: sites, plan: accounts.plan })
      .from(sites)
      .innerJoin(accounts, eq(accounts.id, sites.accountId))
      .where(eq(sites.id, siteId));
    return row ? { site: row.site, plan: planFor(row.plan) } : undefined;
  }

  /**
   * Locks the site row for the rest of `tx` and returns its usage. Every change to a site's
   * files runs under this lock, so quota checks and counter updates cannot interleave.
   */
  async lockUsage(tx: Executor, siteId: number): Promise<SiteUsage> {
    const [row] = await tx
      .select({ site: sites, plan: accounts.plan })
      .from(sites)
      .innerJoin(accounts, eq(accounts.id, sites.accountId))
      .where(eq(sites.id, siteId))
      .for('update', { of: sites });
    if (!row) throw new PlatformError('unknown_site', `site ${siteId} does not exist`);
    return { site: row.site, plan: planFor(row.plan) };
  }

  /** Adds to the usage counters and bumps the site version; NOTIFY fires when `tx` commits. */
  async recordChange(tx: Executor, siteId: number, filesDelta: number, bytesDelta: number): Promise<void> {
    await tx
      .update(sites)
      .set({
        fileCount: sql`${sites.fileCount} + ${filesDelta}`,
        storageBytes: sql`${sites.storageBytes} + ${bytesDelta}`,
        version: sql`${sites.version} + 1`,
      })
      .where(eq(sites.id, siteId));
    await tx.execute(sql`select pg_notify(${SITE_CHANGED_CHANNEL}, ${String(siteId)})`);
  }

  /** Host routing: a slug or a custom domain to a site. */
  async siteBySlug(slug: string): Promise<Site | undefined> {
    const [site] = await this.db
      .select()
      .from(sites)
      .where(and(eq(sites.slug, slug), isNull(sites.detachedAt)));
    return site;
  }

  async siteByCustomDomain(hostname: string): Promise<Site | undefined> {
    const [row] = await this.db
      .select({ site: sites })
      .from(customDomains)
      .innerJoin(sites, eq(sites.id, customDomains.siteId))
      .where(and(eq(customDomains.hostname, hostname), isNull(sites.detachedAt)));
    return row?.site;
  }

  // ---- Cluster mode: the Site resource's routing mirrored into the database ------------------

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
        if (!site) throw new PlatformError('unknown_site', `site ${siteId} does not exist`);
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
        if (changed) await tx.execute(sql`select pg_notify(${SITE_CHANGED_CHANNEL}, ${ROUTES_CHANGED})`);
        return { slug: slugApplied ? slug : site.slug, slugApplied, domains, changed };
      }),
    );
  }

  /**
   * deletionPolicy Retain: releases the site's custom domains and stops serving it, keeping its
   * files, keys, forms and databases. Applying a Site with its slug again re-attaches it.
   */
  async detachSite(siteId: number): Promise<void> {
    await dbOp('detach_site', () =>
      this.db.transaction(async (tx) => {
        await tx.delete(customDomains).where(eq(customDomains.siteId, siteId));
        await tx
          .update(sites)
          .set({ detachedAt: sql`now()` })
          .where(eq(sites.id, siteId));
        await tx.execute(sql`select pg_notify(${SITE_CHANGED_CHANNEL}, ${ROUTES_CHANGED})`);
      }),
    );
  }

  /**
   * deletionPolicy Delete: removes the site with everything that belongs to it (keys, domains and
   * file index cascade; blob bytes no other site uses are removed by the orphan sweep).
   */
  async deleteSite(siteId: number): Promise<boolean> {
    return dbOp('delete_site', () =>
      this.db.transaction(async (tx) => {
        const deleted = await tx.delete(sites).where(eq(sites.id, siteId)).returning({ id: sites.id });
        await tx.execute(sql`select pg_notify(${SITE_CHANGED_CHANNEL}, ${ROUTES_CHANGED})`);
        await tx.execute(sql`select pg_notify(${SITE_CHANGED_CHANNEL}, ${String(siteId)})`);
        return deleted.length > 0;
      }),
    );
  }

  /** Deletes expired temporary keys and account sessions; returns how many rows went. */
  async sweepExpiredCredentials(): Promise<number> {
    const keys = await this.db
      .delete(apiKeys)
      .where(and(eq(apiKeys.kind, 'temporary'), lt(apiKeys.expiresAt, sql`now()`)))
      .returning({ id: apiKeys.id });
    const sessions = await this.db
      .delete(accountSessions)
      .where(lt(accountSessions.expiresAt, sql`now()`))
      .returning({ id: accountSessions.id });
    return keys.length + sessions.length;
  }
}

export const SITE_CHANGED_CHANNEL = 'hostplane_site_changed';
/** Payload on SITE_CHANGED_CHANNEL: a slug or custom domain changed (edges drop host caches). */
export const ROUTES_CHANGED = 'routes';

/** A new permanent API key. */
export const newApiKey = (): string => newSecret('hp_live_');

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
