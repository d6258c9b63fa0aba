import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { newApiKey } from './keys.js';
import type { PlanType } from './plans.js';
import { hashSecret } from './secrets.js';
import { SLUG_RULE, isValidSlug } from './slug.js';
import { accounts, apiKeys, customDomains, sites } from './tables.js';
import { notifySiteEvent } from './site-events.js';
import type { Site } from './types.js';

export interface NewSite {
  email: string;
  slug: string;
  plan: PlanType;
  name?: string | undefined;
  /** A key minted beforehand (cluster adoption keeps it in a Secret first); default: a new one. */
  apiKey?: string | undefined;
  /** Cluster adoption: the uid of the Site resource that controls the new site. */
  resourceUid?: string | undefined;
}

export interface CreatedSite {
  accountId: number;
  siteId: number;
  slug: string;
  plan: PlanType;
  /** Shown once; stored only as a hash. */
  apiKey: string;
}

/** Sites: creation (with the account and first key), lookup by id, slug or domain, deletion. */
export class Sites {
  constructor(private readonly db: Db) {}

  async create(input: NewSite): Promise<CreatedSite> {
    const email = input.email.trim().toLowerCase();
    if (!isValidSlug(input.slug)) {
      throw new AppError('INVALID_SLUG', { message: SLUG_RULE });
    }
    return dbOp('create_site', () =>
      this.db.transaction(async (tx) => {
        // An operator's account: its address counts as proven (it may sign in once a reset or an
        // invitation sets its password).
        await tx
          .insert(accounts)
          .values({ email, plan: input.plan, emailVerifiedAt: sql`now()` })
          .onConflictDoNothing();
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
        if (!site) throw new AppError('SLUG_TAKEN', { slug: input.slug });
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

  /** The account's site with `siteId`, or its first site when omitted. */
  async ofAccount(accountId: number, siteId?: number): Promise<Site | undefined> {
    const where =
      siteId === undefined
        ? eq(sites.accountId, accountId)
        : and(eq(sites.accountId, accountId), eq(sites.id, siteId));
    const [site] = await this.db.select().from(sites).where(where).orderBy(asc(sites.id)).limit(1);
    return site;
  }

  /** Every site of the account, oldest first. */
  listOfAccount(accountId: number): Promise<Site[]> {
    return this.db
      .select()
      .from(sites)
      .where(eq(sites.accountId, accountId))
      .orderBy(asc(sites.id))
      .limit(1000);
  }

  async countOfAccount(accountId: number): Promise<number> {
    const [row] = await this.db
      .select({ n: sql<number>`count(*)::int` })
      .from(sites)
      .where(eq(sites.accountId, accountId));
    return row?.n ?? 0;
  }

  async get(siteId: number): Promise<Site | undefined> {
    const [site] = await this.db.select().from(sites).where(eq(sites.id, siteId));
    return site;
  }

  /** Host routing: a slug or a custom domain to a site. */
  async bySlug(slug: string): Promise<Site | undefined> {
    const [site] = await this.db
      .select()
      .from(sites)
      .where(and(eq(sites.slug, slug), isNull(sites.detachedAt)));
    return site;
  }

  async byCustomDomain(hostname: string): Promise<Site | undefined> {
    const [row] = await this.db
      .select({ site: sites })
      .from(customDomains)
      .innerJoin(sites, eq(sites.id, customDomains.siteId))
      .where(and(eq(customDomains.hostname, hostname), isNull(sites.detachedAt)));
    return row?.site;
  }

  /**
   * deletionPolicy Retain: releases the site's custom domains and stops serving it, keeping its
   * files, keys, forms and databases. Applying a Site with its slug again re-attaches it.
   */
  async detach(siteId: number): Promise<void> {
    await dbOp('detach_site', () =>
      this.db.transaction(async (tx) => {
        await tx.delete(customDomains).where(eq(customDomains.siteId, siteId));
        await tx
          .update(sites)
          .set({ detachedAt: sql`now()` })
          .where(eq(sites.id, siteId));
        await tx.execute(notifySiteEvent({ kind: 'routes' }));
      }),
    );
  }

  /**
   * deletionPolicy Delete: removes the site with everything that belongs to it (keys, domains and
   * file index cascade; blob bytes no other site uses are removed by the orphan sweep).
   */
  async delete(siteId: number): Promise<boolean> {
    return dbOp('delete_site', () =>
      this.db.transaction(async (tx) => {
        const deleted = await tx.delete(sites).where(eq(sites.id, siteId)).returning({ id: sites.id });
        await tx.execute(notifySiteEvent({ kind: 'removed', siteId }));
        // Until the next release, also in the two events a replica of the previous release
        // understands (it ignores `removed`), so that a rolling upgrade forgets the site at once.
        await tx.execute(notifySiteEvent({ kind: 'routes' }));
        await tx.execute(notifySiteEvent({ kind: 'content', siteId }));
        return deleted.length > 0;
      }),
    );
  }
}
