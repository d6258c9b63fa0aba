import { sql } from 'drizzle-orm';
import type { PlanType } from '../platform/index.js';
import type { Executor, Tx } from '../store/index.js';
import type { DeployState } from './deploy-blobs.js';
import { deployEventsTotal } from './metrics.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/** Published deploys kept per site, by plan (the live one is always kept besides); drafts don't count. */
export const DEPLOY_RETENTION: Record<PlanType, number> = {
  free: 10,
  standard: 50,
  premium: 100,
  business: 200,
  enterprise: 500,
};
/** Finalized drafts kept per site, by plan: their own, smaller window (they never push out a rollback target). */
export const DRAFT_RETENTION: Record<PlanType, number> = {
  free: 5,
  standard: 10,
  premium: 20,
  business: 40,
  enterprise: 100,
};

/** Bytes held by a site's unpublished deploys (see assertPendingWithinStorage). */
export async function pendingBytes(db: Executor, siteId: number): Promise<number> {
  const [row] = rowsOf<{ bytes: string }>(
    await db.execute(sql`select coalesce(sum(bytes), 0)::text as bytes from deploys
      where site_id = ${siteId}::int and state in ('uploading', 'ready', 'draft')`),
  );
  return Number(row!.bytes);
}

/**
 * Deletes finalized deploys beyond the plan's retention (never the live one); their blobs go to
 * the sweep. Runs in the switch's transaction, under the site lock (no restore can race it).
 */
export async function pruneDeploys(tx: Tx, siteId: number, plan: PlanType): Promise<number> {
  const keep = (state: DeployState, n: number) => sql`
    (state = ${state} and id not in (
      select id from deploys where site_id = ${siteId}::int and state = ${state}
      order by created_at desc, id desc limit ${n}::int
    ))`;
  const gone = await tx.execute(sql`
    delete from deploys where site_id = ${siteId}::int
      and id <> coalesce((select deploy_id from live_deploys where site_id = ${siteId}::int), '')
      and (${keep('published', DEPLOY_RETENTION[plan])} or ${keep('draft', DRAFT_RETENTION[plan])})
    returning id`);
  deployEventsTotal.inc({ event: 'pruned' }, rowsOf(gone).length);
  return rowsOf(gone).length;
}
