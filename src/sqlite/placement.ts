import { and, asc, eq, gt, ne, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { Db } from '../store/index.js';
import { LEASE_TTL_MS } from './shards.js';
import { placeOn } from './replication/upkeep.js';
import { sqliteDatabases, sqliteShards } from './tables.js';

export interface DrainResult {
  shard: string;
  /** Databases placed on another shard: their owner lets each go after a last sync. */
  moved: { databaseId: number; to: string }[];
  /** Databases left where they are, and why. */
  left: { databaseId: number; reason: string }[];
}

/**
 * Drains a shard (before scaling it away, or to move load): it gets no new placements, and each
 * database placed on it moves to the live shard with the fewest (or to `to`). A move is a
 * placement change: the owner stops writes, syncs its replica and lets the database go; the new
 * shard restores it from the replica on its first call and takes the lease — so a database with
 * replication off, whose only copy is on the drained shard's volume, is left in place.
 */
export async function drainShard(db: Db, shard: string, to?: string): Promise<DrainResult> {
  const marked = await db
    .update(sqliteShards)
    .set({ draining: true })
    .where(eq(sqliteShards.name, shard))
    .returning({ name: sqliteShards.name });
  if (marked.length === 0)
    throw new AppError('NOT_FOUND', { message: `no SQLite shard is named "${shard}"` });
  if (to !== undefined && !(await liveShard(db, to)))
    throw new AppError('INVALID_REQUEST', { message: `shard "${to}" is not live or is draining` });
  const databases = await db
    .select({ id: sqliteDatabases.id, replicationEnabled: sqliteDatabases.replicationEnabled })
    .from(sqliteDatabases)
    .where(eq(sqliteDatabases.shard, shard))
    .orderBy(asc(sqliteDatabases.id));
  const result: DrainResult = { shard, moved: [], left: [] };
  for (const database of databases) {
    if (!database.replicationEnabled) {
      result.left.push({
        databaseId: database.id,
        reason: 'replication is off: its only copy is on this shard',
      });
      continue;
    }
    const target = to ?? (await leastLoaded(db, shard));
    if (!target) {
      result.left.push({ databaseId: database.id, reason: 'no other live shard' });
      continue;
    }
    if (await placeOn(db, database.id, target, 'drain'))
      result.moved.push({ databaseId: database.id, to: target });
  }
  return result;
}

/**
 * Moves one database to shard `to` (the SqliteDatabase's `spec.shard`): refused when `to` is not
 * live or draining, or when the database's replication is off (its only copy is on its shard).
 */
export async function moveDatabase(db: Db, databaseId: number, to: string): Promise<'moved' | 'already'> {
  const [database] = await db
    .select({ shard: sqliteDatabases.shard, replicationEnabled: sqliteDatabases.replicationEnabled })
    .from(sqliteDatabases)
    .where(eq(sqliteDatabases.id, databaseId));
  if (!database) throw new AppError('NOT_FOUND', { message: `no SQLite database ${databaseId}` });
  if (database.shard === to) return 'already';
  if (database.shard !== null && !database.replicationEnabled)
    throw new AppError('INVALID_REQUEST', {
      message: 'replication is off for this database: its only copy is on its shard, so it cannot move',
    });
  if (!(await liveShard(db, to)))
    throw new AppError('INVALID_REQUEST', { message: `shard "${to}" is not live or is draining` });
  return (await placeOn(db, databaseId, to, 'pin')) ? 'moved' : 'already';
}

async function liveShard(db: Db, name: string): Promise<boolean> {
  const rows = await db
    .select({ name: sqliteShards.name })
    .from(sqliteShards)
    .where(
      and(
        eq(sqliteShards.name, name),
        eq(sqliteShards.draining, false),
        gt(sqliteShards.heartbeatAt, freshSince()),
      ),
    );
  return rows.length > 0;
}

/** The live, undrained shard other than `except` with the fewest databases placed on it. */
async function leastLoaded(db: Db, except: string): Promise<string | undefined> {
  const [row] = await db
    .select({ name: sqliteShards.name })
    .from(sqliteShards)
    .leftJoin(sqliteDatabases, eq(sqliteDatabases.shard, sqliteShards.name))
    .where(
      and(
        ne(sqliteShards.name, except),
        eq(sqliteShards.draining, false),
        gt(sqliteShards.heartbeatAt, freshSince()),
      ),
    )
    .groupBy(sqliteShards.name)
    .orderBy(sql`count(${sqliteDatabases.id})`, asc(sqliteShards.name))
    .limit(1);
  return row?.name;
}

const freshSince = () => new Date(Date.now() - LEASE_TTL_MS);
