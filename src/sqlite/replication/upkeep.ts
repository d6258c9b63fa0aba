import { and, eq, inArray, sql } from 'drizzle-orm';
import { CHANNELS, type Db, type Store } from '../../store/index.js';
import type { Logger } from '../../observability/index.js';
import type { LocalShard } from '../local-shard.js';
import { replicatedDatabases, replicationLag } from '../metrics.js';
import type { Shards } from '../shards.js';
import { sqliteDatabases, type MoveReason } from '../tables.js';
import type { DatabaseRecord, DatabaseReport, Ownership } from './opener.js';

/** The shard's leases (Shards) and its databases' rows, as the opener needs them. */
export function shardOwnership(db: Db, shards: Shards): Ownership {
  return {
    acquire: (id) => shards.acquire(id),
    confirmed: (id) => shards.confirmed(id),
    tookOver: (id) => shards.tookOver(id),
    async nextGeneration(id, from) {
      const [row] = await db
        .update(sqliteDatabases)
        .set({ replicaGeneration: from + 1 })
        .where(and(eq(sqliteDatabases.id, id), eq(sqliteDatabases.replicaGeneration, from)))
        .returning({ generation: sqliteDatabases.replicaGeneration });
      if (row) return row.generation;
      const [now] = await db
        .select({ generation: sqliteDatabases.replicaGeneration })
        .from(sqliteDatabases)
        .where(eq(sqliteDatabases.id, id));
      return now?.generation ?? from + 1;
    },
    release: (id) => shards.release(id),
    async record(id): Promise<DatabaseRecord | undefined> {
      const [row] = await db
        .select({
          id: sqliteDatabases.id,
          siteId: sqliteDatabases.siteId,
          path: sqliteDatabases.path,
          replicaGeneration: sqliteDatabases.replicaGeneration,
          version: sqliteDatabases.version,
          replicationEnabled: sqliteDatabases.replicationEnabled,
          replicationState: sqliteDatabases.replicationState,
        })
        .from(sqliteDatabases)
        .where(eq(sqliteDatabases.id, id));
      return row;
    },
    async report(id, report: DatabaseReport) {
      if (Object.keys(report).length === 0) return;
      await db.update(sqliteDatabases).set(report).where(eq(sqliteDatabases.id, id));
    },
  };
}

/**
 * Keeps what a shard owns in line with PostgreSQL: a database placed elsewhere (a drain; told by
 * NOTIFY, checked again at each lease round) is let go after a last sync; one whose lease was lost
 * (deleted, or taken over after an expiry) is let go without one, its local copy removed. After
 * each round it reports every open database's version, size and replication to its row.
 */
export async function keepShardInLine(deps: {
  store: Store;
  shards: Shards;
  shard: LocalShard;
  ownership: Ownership;
  logger: Logger;
}): Promise<() => Promise<void>> {
  const { shards, shard, logger } = deps;
  const moving = new Set<number>();
  const letGo = (id: number, discard: boolean) => {
    if (moving.has(id)) return;
    moving.add(id);
    void shard
      .letGo(id, { removeFile: true, discard })
      .then(() =>
        logger.info({ databaseId: id, discard }, 'sqlite database let go (placed elsewhere or removed)'),
      )
      .catch((err: unknown) => logger.error({ err, databaseId: id }, 'sqlite database could not be let go'))
      .finally(() => moving.delete(id));
  };
  const checkPlacement = async () => {
    for (const id of await shards.placedElsewhere()) letGo(id, false);
  };
  shards.onLost = (ids) => {
    for (const id of ids) letGo(id, true);
  };
  const openIfPlacedHere = async (id: number) => {
    try {
      if (await shards.isPlacedHere(id)) await shard.handle({ id }, null);
    } catch (err) {
      logger.debug({ err, databaseId: id }, 'sqlite database placed here not opened yet');
    }
  };
  const behindSince = new Map<number, number>();
  const windowAt = new Map<number, number>();
  shards.onRenewed = async () => {
    await checkPlacement();
    await followReplicationSwitch(deps.store.db, shard, logger);
    await report(deps, behindSince, windowAt);
  };
  const unlisten = await deps.store.listen(
    CHANNELS.sqlitePlacement,
    (payload) => {
      const id = Number(payload);
      if (shards.holds(id)) void checkPlacement().catch(() => undefined);
      // Placed here (a failover, a drain): restored and opened now, not at the first call. While
      // its last owner still holds the lease (a drain under way) this fails, and the call opens it.
      else void openIfPlacedHere(id);
    },
    () => void checkPlacement().catch(() => undefined),
  );
  return unlisten;
}

/**
 * Replication turned on or off for an open database (its SqliteDatabase resource): the file is
 * closed, keeping its lease, and opened again by the next call, registered or not as it now says.
 */
async function followReplicationSwitch(db: Db, shard: LocalShard, logger: Logger): Promise<void> {
  if (!shard.replicator.enabled) return;
  const ids = shard.openIds();
  if (ids.length === 0) return;
  const rows = await db
    .select({ id: sqliteDatabases.id, enabled: sqliteDatabases.replicationEnabled })
    .from(sqliteDatabases)
    .where(inArray(sqliteDatabases.id, ids));
  for (const { id, enabled } of rows) {
    const now = shard.replicatedHere(id);
    if (now === undefined || now === enabled) continue;
    await shard
      .letGo(id, { removeFile: false, keepLease: true })
      .then(() =>
        logger.info({ databaseId: id, replicated: enabled }, 'sqlite database replication switched'),
      )
      .catch((err: unknown) => logger.warn({ err, databaseId: id }, 'sqlite replication switch deferred'));
  }
}

const WINDOWS_PER_ROUND = 3;
const WINDOW_EVERY_MS = 60 * 60_000;

/** One report round: version and size of each open database, and how its replica stands. */
async function report(
  deps: { shard: LocalShard; ownership: Ownership; logger: Logger },
  behindSince: Map<number, number>,
  windowAt: Map<number, number>,
): Promise<void> {
  const { shard, ownership } = deps;
  const now = Date.now();
  let lag = 0;
  let replicated = 0;
  // The earliest restore point moves only as snapshots age out: a few databases per round, each
  // at most hourly (reading it lists the replica's files in S3).
  let windowsLeft = WINDOWS_PER_ROUND;
  for (const id of shard.openIds()) {
    const state = await shard.stateOf(id);
    if (!state) continue;
    const fields: DatabaseReport = { version: state.version, sizeBytes: state.sizeBytes };
    if (state.file && shard.replicator.enabled && state.replicated) {
      replicated++;
      const inStep = await shard.replicator.inStep(state.file).catch(() => false);
      if (inStep) {
        behindSince.delete(id);
        fields.replicatedAt = new Date(now);
        if (state.replica && windowsLeft > 0 && now - (windowAt.get(id) ?? 0) > WINDOW_EVERY_MS) {
          windowsLeft--;
          windowAt.set(id, now);
          const window = await shard.replicator.restoreWindow(state.replica).catch(() => undefined);
          if (window) fields.restorableFrom = window.earliest;
        }
      } else {
        const since = behindSince.get(id) ?? now;
        behindSince.set(id, since);
        lag = Math.max(lag, (now - since) / 1000);
      }
    }
    await ownership.report(id, fields).catch((err: unknown) => deps.logger.debug({ err }, 'report failed'));
  }
  const open = new Set(shard.openIds());
  for (const id of behindSince.keys()) if (!open.has(id)) behindSince.delete(id);
  for (const id of windowAt.keys()) if (!open.has(id)) windowAt.delete(id);
  replicationLag.set(lag);
  replicatedDatabases.set(replicated);
}

/** Moves a database to another shard: its owner lets it go, the new one restores it on first use. */
export async function placeOn(
  db: Db,
  databaseId: number,
  shard: string,
  reason: Exclude<MoveReason, 'failover'>,
): Promise<boolean> {
  return db.transaction((tx) => moveIn(tx, databaseId, { to: shard, reason }));
}

/**
 * Places a database on shard `to` in transaction `tx`, recording the move (from where, when, why)
 * when it was placed before; with `from`, only if it is still there (a failover that raced
 * another moves it once). Every replica forgets the grants that carry the old placement, and the
 * old owner lets go, when the transaction commits. False when nothing changed.
 */
export async function moveIn(
  tx: Pick<Db, 'update' | 'execute'>,
  databaseId: number,
  move: { to: string; reason: MoveReason; from?: string },
): Promise<boolean> {
  const { shard } = sqliteDatabases;
  const placed = sql`${shard} is not null`;
  const moved = await tx
    .update(sqliteDatabases)
    .set({
      shard: move.to,
      movedFrom: sql`case when ${placed} then ${shard} else ${sqliteDatabases.movedFrom} end`,
      movedAt: sql`case when ${placed} then now() else ${sqliteDatabases.movedAt} end`,
      moveReason: sql`case when ${placed} then ${move.reason} else ${sqliteDatabases.moveReason} end`,
      failoverBlocked: null,
    })
    .where(
      move.from === undefined
        ? sql`${sqliteDatabases.id} = ${databaseId} and ${shard} is distinct from ${move.to}`
        : and(eq(sqliteDatabases.id, databaseId), eq(shard, move.from)),
    )
    .returning({ siteId: sqliteDatabases.siteId });
  const siteId = moved[0]?.siteId;
  if (siteId === undefined) return false;
  await tx.execute(sql`select pg_notify(${CHANNELS.sqliteGrants}, ${String(siteId)})`);
  await tx.execute(sql`select pg_notify(${CHANNELS.sqlitePlacement}, ${String(databaseId)})`);
  return true;
}
