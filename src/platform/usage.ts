import { eq, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { Db, Executor } from '../store/index.js';
import { planFor } from './plans.js';
import { accounts, sites } from './tables.js';
import { notifyContentChangedOf } from './site-events.js';
import type { SiteUsage } from './types.js';

/** What a change did to a site's counters (each 0 when left out). */
export interface UsageChange {
  /** Files and SQLite databases (the plan's file count). */
  files?: number;
  bytes?: number;
  folders?: number;
  /** Files named .gitkeep (counted as files, never listed). */
  hiddenFiles?: number;
}

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
   * Claims up to `limit` sites for a recount of their counters: those checked longest ago, marked
   * checked now in the same statement, so the next pass (of any replica) takes the next ones. Rows
   * another transaction has locked (an upload, another replica's claim) are skipped, not waited for.
   */
  async claimCounterChecks(limit: number): Promise<number[]> {
    const result = await this.db.execute(sql`
      update ${sites} set counters_checked_at = now()
      where id in (
        select id from ${sites} order by counters_checked_at, id limit ${limit}::int
        for update skip locked
      )
      returning id`);
    return (result as unknown as { rows: Array<{ id: number }> }).rows.map((r) => r.id);
  }

  /**
   * Adds to the usage counters and bumps the site version; NOTIFY fires when `tx` commits. One
   * statement (one round trip): the notification is sent only if the site row was updated.
   */
  async recordChange(tx: Executor, siteId: number, change: UsageChange): Promise<void> {
    const { files = 0, bytes = 0, folders = 0, hiddenFiles = 0 } = change;
    await tx.execute(sql`
      with changed as (
        update ${sites}
        set file_count = file_count + ${files}::int,
            storage_bytes = storage_bytes + ${bytes}::bigint,
            folder_count = folder_count + ${folders}::int,
            hidden_file_count = hidden_file_count + ${hiddenFiles}::int,
            version = version + 1
        where id = ${siteId}::int
        returning id
      )
      select ${notifyContentChangedOf(sql`id`)} from changed`);
  }
}
