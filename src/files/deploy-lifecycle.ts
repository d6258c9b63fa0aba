import { sql } from 'drizzle-orm';
import type { Db, Tx } from '../store/index.js';
import { deployEventsTotal } from './metrics.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/*
 * Unfinished deploys (uploading, ready) never lock a site out: a client cancels its own
 * (DELETE /api/v1/deploys/{id}), the sweep deletes those idle for HOSTPLANE_DEPLOY_IDLE_SECONDS,
 * and a create at the cap deletes the least recently active one. Deleting a deploy deletes its
 * manifest rows (cascade); blobs nothing references any more go to the orphan sweep, under its
 * claim protocol (blob-claims.ts), like any other unreferenced blob.
 */

/** Unfinished deploys one site may hold at once; a create beyond it displaces the idlest. */
export const MAX_OPEN_DEPLOYS = 20;
/** Idle deploys one sweep statement deletes (a sweep loops until none is left). */
const SWEEP_BATCH = 500;

/**
 * In a create's transaction, once its row `created` is in: when the site holds MAX_OPEN_DEPLOYS
 * unfinished deploys besides it, deletes the ones with the oldest activity (a create or a blob
 * upload) so that the new one fits. The least recently active rather than the oldest: a deploy
 * still uploading is the one to keep.
 * Two creates at once may each see the same count (no site lock here): the cap is then passed
 * by one for a while, never enforced by refusing.
 */
export async function makeRoomForOne(tx: Tx, siteId: number, created: string): Promise<number> {
  const gone = rowsOf<{ id: string }>(
    await tx.execute(sql`
      with open as (
        select id, row_number() over (order by last_activity_at desc, created_at desc, id desc) as rank
        from deploys where site_id = ${siteId}::int and state in ('uploading', 'ready') and id <> ${created}
      )
      delete from deploys where id in (select id from open where rank >= ${MAX_OPEN_DEPLOYS}::int)
        and state in ('uploading', 'ready')
      returning id`),
  );
  deployEventsTotal.inc({ event: 'displaced' }, gone.length);
  return gone.length;
}

/**
 * Deletes unfinished deploys idle for longer than `idleMs`. Several replicas sweep: each
 * statement locks the rows it deletes and skips those another sweeper (or a switch, or an upload's
 * commit) holds, so every deploy is deleted by one of them, and counted once.
 */
export async function sweepIdleDeploys(db: Db, idleMs: number): Promise<number> {
  let total = 0;
  for (;;) {
    const gone = rowsOf<{ id: string }>(
      await db.execute(sql`
        delete from deploys where id in (
          select id from deploys where state in ('uploading', 'ready')
            and last_activity_at < now() - ${`${idleMs} milliseconds`}::interval
          order by last_activity_at limit ${SWEEP_BATCH}::int
          for update skip locked
        )
        returning id`),
    ).length;
    total += gone;
    if (gone < SWEEP_BATCH) break;
  }
  deployEventsTotal.inc({ event: 'abandoned' }, total);
  return total;
}
