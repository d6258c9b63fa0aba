import { eq, sql } from 'drizzle-orm';
import client from 'prom-client';
import { dbOp, registry, type Logger } from '../observability/index.js';
import type { Db, Tx } from '../store/index.js';
import { sqliteReplicaSweeps } from './tables.js';

/** Where a removed database's replica was: enough to find its root in the bucket. */
export interface ReplicaAddress {
  id: number;
  siteId: number;
  path: string;
}

interface ClaimedRow {
  database_id: number;
  site_id: number;
  path: string;
  attempts: number;
}

/** A claimed sweep is not due again for this long: the claimer deletes it well before. */
const CLAIM_MS = 10 * 60_000;
/** Sweeps one pass claims: a bucket full of removed replicas drains over several passes. */
const BATCH = 20;

const sweepsTotal = new client.Counter({
  name: 'hostplane_sqlite_replica_sweeps_total',
  help: 'Deferred deletes of removed databases’ replicas in S3, by result (done, failed)',
  labelNames: ['result'] as const,
  registers: [registry],
});

/** Records, in the caller's transaction, that a replica must be deleted (again) from `after`. */
export async function queueReplicaSweep(tx: Tx, database: ReplicaAddress, after: Date): Promise<void> {
  await tx
    .insert(sqliteReplicaSweeps)
    .values({ databaseId: database.id, siteId: database.siteId, path: database.path, sweepAfter: after })
    .onConflictDoUpdate({ target: sqliteReplicaSweeps.databaseId, set: { sweepAfter: after } });
}

/** The replica of `databaseId` is gone: nothing to sweep later. */
export async function forgetReplicaSweep(db: Db, databaseId: number): Promise<void> {
  await db.delete(sqliteReplicaSweeps).where(eq(sqliteReplicaSweeps.databaseId, databaseId));
}

/**
 * One pass over the due sweeps. Each is claimed in one statement (`FOR UPDATE SKIP LOCKED`, the
 * due time moved forward), so two api replicas never sweep the same replica at once; the bucket is
 * then called outside any transaction, and a done sweep's row goes. A failed one stays, due again
 * when its claim runs out. Returns how many replicas were swept.
 */
export async function runReplicaSweeps(
  db: Db,
  removeReplica: (database: ReplicaAddress) => Promise<number>,
  logger: Logger,
): Promise<number> {
  const claimed = await dbOp('sqlite_claim_replica_sweeps', () =>
    db.execute(sql`
      update sqlite_replica_sweeps
         set sweep_after = now() + ${`${CLAIM_MS} milliseconds`}::interval, attempts = attempts + 1
       where database_id in (
         select database_id from sqlite_replica_sweeps
          where sweep_after <= now()
          order by sweep_after
          limit ${BATCH}::int
          for update skip locked)
      returning database_id, site_id, path, attempts`),
  );
  // Both drivers (pg, PGlite) answer rows; drizzle's execute type does not say so.
  const rows = (claimed as unknown as { rows: ClaimedRow[] }).rows;
  let swept = 0;
  for (const row of rows) {
    const database = { id: row.database_id, siteId: row.site_id, path: row.path };
    try {
      const objects = await removeReplica(database);
      await forgetReplicaSweep(db, database.id);
      sweepsTotal.inc({ result: 'done' });
      logger.info(
        { databaseId: database.id, siteId: database.siteId, objects },
        'removed database’s replica swept',
      );
      swept++;
    } catch (err) {
      sweepsTotal.inc({ result: 'failed' });
      logger.warn(
        { err, databaseId: database.id, siteId: database.siteId, attempts: row.attempts },
        'removed database’s replica not swept: trying again later',
      );
    }
  }
  return swept;
}
