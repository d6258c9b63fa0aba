import { sql } from 'drizzle-orm';
import type { Plan, PlanType } from '../platform/index.js';
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
 * What the deploys kept for rollback may hold beyond the live deploy, as a multiple of the plan's
 * storage limit (null: unlimited plans keep what the count allows).
 */
export const ROLLBACK_STORAGE_FACTOR = 1;

export const rollbackLimit = (plan: Plan): number | null =>
  plan.maxStorageBytes === null ? null : plan.maxStorageBytes * ROLLBACK_STORAGE_FACTOR;

/**
 * Deletes finalized deploys beyond the plan's retention (never the live one); their blobs go to
 * the sweep. Runs in the switch's transaction, under the site lock (no restore can race it, and
 * two replicas' switches of one site run one after the other: the bound below holds across them).
 *
 * Two bounds: how many deploys (DEPLOY_RETENTION, DRAFT_RETENTION), and how many bytes the
 * published ones besides the live one hold of their own (distinct blobs outside the live deploy's
 * manifest, each counted once): at most rollbackLimit(plan), the oldest pruned first. Drafts and
 * unfinished deploys have their own storage bound (assertPendingWithinStorage). Records what is
 * kept in live_deploys (shown in usage).
 */
export async function pruneDeploys(tx: Tx, siteId: number, plan: Plan): Promise<number> {
  const keep = (state: DeployState, n: number) => sql`
    (state = ${state} and id not in (
      select id from deploys where site_id = ${siteId}::int and state = ${state}
      order by created_at desc, id desc limit ${n}::int
    ))`;
  const byCount = rowsOf(
    await tx.execute(sql`
      delete from deploys where site_id = ${siteId}::int
        and id <> coalesce((select deploy_id from live_deploys where site_id = ${siteId}::int), '')
        and (${keep('published', DEPLOY_RETENTION[plan.type])} or ${keep('draft', DRAFT_RETENTION[plan.type])})
      returning id`),
  ).length;
  // Each kept deploy, newest first, adds the blobs no newer one (nor the live one) holds: the
  // running sum is what keeping it and every newer one costs; past the limit, the rest goes.
  const limit = rollbackLimit(plan);
  const [row] = rowsOf<{ pruned: number; bytes: string; deploys: number }>(
    await tx.execute(sql`
      with live as (
        select deploy_id from live_deploys where site_id = ${siteId}::int
      ),
      ranked as (
        select id, row_number() over (order by created_at desc, id desc) as rank
        from deploys where site_id = ${siteId}::int and state = 'published'
          and id <> coalesce((select deploy_id from live), '')
      ),
      firsts as (
        select min(r.rank) as rank, max(f.size) as size
        from deploy_files f join ranked r on r.id = f.deploy_id
        where not exists (
          select 1 from deploy_files l where l.site_id = ${siteId}::int and l.hash = f.hash
            and l.deploy_id = (select deploy_id from live)
        )
        group by f.hash
      ),
      per_rank as (select rank, sum(size) as bytes from firsts group by rank),
      running as (
        select r.id, sum(coalesce(p.bytes, 0)) over (order by r.rank) as bytes
        from ranked r left join per_rank p on p.rank = r.rank
      ),
      over as (
        select id from running where ${limit}::bigint is not null and bytes > ${limit}::bigint
      ),
      gone as (
        delete from deploys where id in (select id from over) returning id
      ),
      kept as (
        select coalesce(max(bytes), 0) as bytes, count(*)::int as deploys
        from running where id not in (select id from over)
      ),
      recorded as (
        update live_deploys set rollback_bytes = (select bytes from kept),
          rollback_deploys = (select deploys from kept)
        where site_id = ${siteId}::int
      )
      select (select count(*)::int from gone) as pruned, (select bytes::text from kept) as bytes,
        (select deploys from kept) as deploys`),
  );
  const pruned = byCount + row!.pruned;
  deployEventsTotal.inc({ event: 'pruned' }, pruned);
  return pruned;
}

/** What each site's deploys kept for rollback hold (see pruneDeploys); sites without a live deploy: 0. */
export async function rollbackUsage(
  db: Executor,
  siteIds: number[],
): Promise<Map<number, { bytes: number; deploys: number }>> {
  const found = new Map<number, { bytes: number; deploys: number }>();
  if (siteIds.length === 0) return found;
  const rows = rowsOf<{ site_id: number; bytes: string; deploys: number }>(
    await db.execute(sql`select site_id, rollback_bytes::text as bytes, rollback_deploys as deploys
      from live_deploys where site_id in (${sql.join(
        siteIds.map((id) => sql`${id}::int`),
        sql`, `,
      )})`),
  );
  for (const r of rows) found.set(r.site_id, { bytes: Number(r.bytes), deploys: r.deploys });
  return found;
}
