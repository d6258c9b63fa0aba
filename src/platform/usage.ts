import { eq, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { Db } from '../store/index.js';
import { planFor } from './plans.js';
import { accounts, sites } from './tables.js';
import { SITE_CHANGED_CHANNEL, type Executor, type SiteUsage } from './types.js';

/**
 * Per-site usage against the account's plan. Every change to a site's files runs under
 * `lock`, so quota checks and counter updates cannot interleave.
 */
export class Usage {
  constructor(private readonly db: Db) {}

  async get(siteId: number): Promise<SiteUsage | undefined> {
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
  async lock(tx: Executor, siteId: number): Promise<SiteUsage> {
    const [row] = await tx
      .select({ site: sites, plan: accounts.plan })
      .from(sites)
      .innerJoin(accounts, eq(accounts.id, sites.accountId))
      .where(eq(sites.id, siteId))
      .for('update', { of: sites });
    if (!row) throw new AppError('UNKNOWN_SITE', { siteId });
    return { site: row.site, plan: planFor(row.plan) };
  }

  /**
   * Adds to the usage counters and bumps the site version; NOTIFY fires when `tx` commits. One
   * statement (one round trip): the notification is sent only if the site row was updated.
   */
  async recordChange(tx: Executor, siteId: number, filesDelta: number, bytesDelta: number): Promise<void> {
    await tx.execute(sql`
      with changed as (
        update ${sites}
        set file_count = file_count + ${filesDelta}::int,
            storage_bytes = storage_bytes + ${bytesDelta}::bigint,
            version = version + 1
        where id = ${siteId}::int
        returning id
      )
      select pg_notify(${SITE_CHANGED_CHANNEL}, id::text) from changed`);
  }
}
