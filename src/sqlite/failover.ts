import { sql } from 'drizzle-orm';
import type { Logger } from '../observability/index.js';
import { CHANNELS, type Db } from '../store/index.js';
import {
  failoverBlockedDatabases,
  failoverDatabases,
  failoverSeconds,
  failoversTotal,
  shardsByState,
} from './metrics.js';
import { moveIn } from './replication/upkeep.js';
import { LEASE_TTL_MS, PLACEMENT_LOCK_CLASS, RENEW_EVERY_MS } from './shards.js';
import { FAILOVER_BLOCKS, type FailoverBlock } from './tables.js';

/**
 * A shard that said no goodbye is judged lost only once it missed two heartbeats: by then it has
 * stopped acting on its leases too (a shard acts on a lease only while renewed this recently).
 */
export const SILENT_AT_LEAST_MS = LEASE_TTL_MS - RENEW_EVERY_MS;
/** How often each shard looks for lost shards (one small query while there are none). */
export const FAILOVER_POLL_MS = 1_000;
/** A database that could not move is looked at again this often (not at every poll). */
const BLOCKED_RETRY_MS = 10_000;
/** How often the gauges of shards by state and blocked databases are refreshed. */
const GAUGES_EVERY_MS = 2_000;

/** What one failover round did with one lost shard's databases. */
export interface FailoverOutcome {
  shard: string;
  /** How long the shard had been gone (from its stop, or its last heartbeat) when they moved. */
  goneMs: number;
  moved: { databaseId: number; to: string }[];
  /** Databases that stay (newly: a database already blocked is not listed again). */
  left: { databaseId: number; reason: FailoverBlock }[];
}

type LostDatabase = {
  id: number;
  shard: string;
  gone_ms: number;
  replication_enabled: boolean;
  replication_state: string;
  failover_blocked: FailoverBlock | null;
};

/**
 * The lost shards, as PostgreSQL's clock sees them: stopped more than `afterMs` ago, or silent
 * (no heartbeat) for more than `afterMs` and at least SILENT_AT_LEAST_MS.
 */
const lostShard = (afterMs: number) => sql`(
  (s.left_at is not null and s.left_at < now() - ${`${afterMs} milliseconds`}::interval)
  or (s.left_at is null and s.heartbeat_at < now() - ${`${Math.max(afterMs, SILENT_AT_LEAST_MS)} milliseconds`}::interval))`;

/** No live lease on the database: its owner's ran out (or was released), so another may take it. */
const leaseRunOut = sql`not exists (select 1 from sqlite_leases l where l.database_id = d.id and l.expires_at > now())`;

/**
 * One failover round: every database of a lost shard whose lease has run out is placed on the
 * live, undrained shard with the fewest databases under the cap (`maxDatabases`), and its new
 * owner restores it from its replica. Decided once: the round holds the placement lock (the one
 * new placements take, so caps hold across both), reads everything under it, and moves each
 * database only if it is still on the lost shard, so racing rounds move each database once.
 * A database without a replica (replication off, or its shard had none) stays: its only copy is
 * on that shard's volume; one no shard has room for stays too (`failover_blocked` says why).
 */
export async function failOverLostShards(
  db: Db,
  options: { afterMs: number; maxDatabases: number; retryBlocked?: boolean },
): Promise<FailoverOutcome[]> {
  const { afterMs, maxDatabases } = options;
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${PLACEMENT_LOCK_CLASS}, 0)`);
    const lost = await tx
      .execute<LostDatabase>(
        sql`
      select d.id, d.shard, d.replication_enabled, d.replication_state, d.failover_blocked,
        (extract(epoch from now() - coalesce(s.left_at, s.heartbeat_at)) * 1000)::float8 as gone_ms
      from sqlite_databases d join sqlite_shards s on s.name = d.shard
      where ${lostShard(afterMs)} and ${leaseRunOut}
        ${options.retryBlocked === false ? sql`and d.failover_blocked is null` : sql``}
      order by d.id`,
      )
      .then(rowsOf<LostDatabase>);
    if (lost.length === 0) return [];
    // Live: a heartbeat within two renewal rounds, not stopped, not drained.
    const targets = await tx
      .execute<{ name: string; placed: number }>(
        sql`
      select s.name, count(d.id)::int as placed from sqlite_shards s
      left join sqlite_databases d on d.shard = s.name
      where s.heartbeat_at > now() - ${`${SILENT_AT_LEAST_MS} milliseconds`}::interval
        and s.left_at is null and not s.draining
      group by s.name`,
      )
      .then(rowsOf<{ name: string; placed: number }>);
    const load = new Map(targets.map((t) => [t.name, Number(t.placed)]));
    const outcomes = new Map<string, FailoverOutcome>();
    for (const database of lost) {
      let outcome = outcomes.get(database.shard);
      if (!outcome) {
        outcome = { shard: database.shard, goneMs: Number(database.gone_ms), moved: [], left: [] };
        outcomes.set(database.shard, outcome);
      }
      const block = async (reason: FailoverBlock) => {
        if (database.failover_blocked === reason) return;
        outcome.left.push({ databaseId: database.id, reason });
        await tx.execute(
          sql`update sqlite_databases set failover_blocked = ${reason} where id = ${database.id}`,
        );
        // Told as a move is (on commit): the resource's status says at once that it cannot move,
        // not at the controller's next periodic resync.
        await tx.execute(sql`select pg_notify(${CHANNELS.sqlitePlacement}, ${String(database.id)})`);
      };
      if (!database.replication_enabled || database.replication_state === 'off') {
        await block('no_replica');
        continue;
      }
      const to = leastLoaded(load, maxDatabases);
      if (!to) {
        await block('no_capacity');
        continue;
      }
      if (await moveIn(tx, database.id, { from: database.shard, to, reason: 'failover' })) {
        load.set(to, load.get(to)! + 1);
        outcome.moved.push({ databaseId: database.id, to });
      }
    }
    return [...outcomes.values()].filter((o) => o.moved.length > 0 || o.left.length > 0);
  });
}

/** The shard with the fewest databases under the cap (ties by name), or undefined when all are full. */
function leastLoaded(load: Map<string, number>, maxDatabases: number): string | undefined {
  let best: [string, number] | undefined;
  for (const [name, placed] of load) {
    if (placed >= maxDatabases) continue;
    if (!best || placed < best[1] || (placed === best[1] && name < best[0])) best = [name, placed];
  }
  return best?.[0];
}

/**
 * Sets hostplane_sqlite_shards{state} and hostplane_sqlite_failover_blocked_databases{reason}
 * from PostgreSQL. Live: a heartbeat within two renewal rounds and not stopped (what the failover
 * places databases on). Lost: not live and still holding databases, which are unserved until it
 * is back or the failover has moved them (then it holds none: left). Every shard reports the same.
 */
export async function refreshShardGauges(db: Db): Promise<void> {
  const shards = await db
    .execute<{ state: string; n: number }>(
      sql`
    select case
        when s.left_at is null and s.heartbeat_at > now() - ${`${SILENT_AT_LEAST_MS} milliseconds`}::interval then 'live'
        when exists (select 1 from sqlite_databases d where d.shard = s.name) then 'lost'
        else 'left' end as state,
      count(*)::int as n
    from sqlite_shards s group by 1`,
    )
    .then(rowsOf<{ state: string; n: number }>);
  // A mark stays until its shard starts again or the database moves: count it while the shard is away.
  const blocked = await db
    .execute<{ reason: string; n: number }>(
      sql`select d.failover_blocked as reason, count(*)::int as n
      from sqlite_databases d join sqlite_shards s on s.name = d.shard
      where d.failover_blocked is not null
        and not (s.left_at is null and s.heartbeat_at > now() - ${`${SILENT_AT_LEAST_MS} milliseconds`}::interval)
      group by 1`,
    )
    .then(rowsOf<{ reason: string; n: number }>);
  for (const state of ['live', 'lost', 'left'])
    shardsByState.set({ state }, Number(shards.find((r) => r.state === state)?.n ?? 0));
  for (const reason of FAILOVER_BLOCKS)
    failoverBlockedDatabases.set({ reason }, Number(blocked.find((r) => r.reason === reason)?.n ?? 0));
}

/**
 * Runs the failover from a shard: every FAILOVER_POLL_MS a small query asks whether a lost shard
 * has a database whose lease ran out, and only then a round takes the placement lock. Errors are
 * logged and counted, never thrown: the next poll tries again. Every GAUGES_EVERY_MS it refreshes
 * the gauges of shards by state (also with `afterMs` 0, the failover off: then it only reports).
 */
export function startFailover(deps: {
  db: Db;
  afterMs: number;
  maxDatabases: number;
  logger: Logger;
  /** Told the databases this round placed on shards (after the commit). */
  onMoved?: (moved: { databaseId: number; to: string }[]) => void;
}): { stop(): Promise<void>; runOnce(): Promise<FailoverOutcome[]> } {
  const { db, afterMs, logger } = deps;
  let running: Promise<unknown> | undefined;
  let blockedTriedAt = 0;
  let gaugesAt = 0;
  const runOnce = async (): Promise<FailoverOutcome[]> => {
    if (Date.now() - gaugesAt >= GAUGES_EVERY_MS) {
      gaugesAt = Date.now();
      await refreshShardGauges(db);
    }
    if (afterMs <= 0) return [];
    const retryBlocked = Date.now() - blockedTriedAt >= BLOCKED_RETRY_MS;
    const [due] = await db
      .execute<{ n: number }>(
        sql`
      select 1 as n from sqlite_databases d join sqlite_shards s on s.name = d.shard
      where ${lostShard(afterMs)} and ${leaseRunOut}
        ${retryBlocked ? sql`` : sql`and d.failover_blocked is null`}
      limit 1`,
      )
      .then(rowsOf<{ n: number }>);
    if (!due) return [];
    if (retryBlocked) blockedTriedAt = Date.now();
    let outcomes: FailoverOutcome[];
    try {
      outcomes = await failOverLostShards(db, { afterMs, maxDatabases: deps.maxDatabases, retryBlocked });
    } catch (err) {
      failoversTotal.inc({ outcome: 'error' });
      throw err;
    }
    for (const outcome of outcomes) report(outcome, logger);
    const moved = outcomes.flatMap((o) => o.moved);
    if (moved.length > 0) deps.onMoved?.(moved);
    return outcomes;
  };
  const timer = setInterval(() => {
    if (running) return;
    running = runOnce()
      .catch((err: unknown) => logger.warn({ err }, 'sqlite failover round failed; trying again'))
      .finally(() => (running = undefined));
  }, FAILOVER_POLL_MS);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** A log line per database moved or newly left, and the metrics of the round. */
function report(outcome: FailoverOutcome, logger: Logger): void {
  const { shard, goneMs } = outcome;
  for (const { databaseId, to } of outcome.moved)
    logger.warn(
      { databaseId, from: shard, to, goneMs: Math.round(goneMs) },
      'sqlite database failed over: its shard is lost, it is restored from its replica on another',
    );
  for (const { databaseId, reason } of outcome.left)
    logger.error(
      { databaseId, shard, reason },
      reason === 'no_capacity'
        ? 'sqlite database of a lost shard stays unserved: no live shard has room (add shards or raise HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD)'
        : 'sqlite database of a lost shard stays unserved: it has no replica, its only copy is on that shard',
    );
  failoverDatabases.inc({ result: 'moved' }, outcome.moved.length);
  for (const { reason } of outcome.left) failoverDatabases.inc({ result: reason });
  if (outcome.moved.length > 0) failoverSeconds.observe(goneMsSeconds(goneMs));
  failoversTotal.inc({
    outcome: outcome.left.length === 0 ? 'moved' : outcome.moved.length > 0 ? 'partial' : 'blocked',
  });
}

const goneMsSeconds = (ms: number) => ms / 1000;

function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? (result as T[])) as T[];
}
