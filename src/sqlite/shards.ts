import { and, eq, gt, inArray, isNotNull, isNull, ne, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { Logger } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { sqliteDatabases, sqliteLeases, sqliteShards } from './tables.js';
import { leasesHeld, placementRefused } from './metrics.js';

/** The spec's lock TTL: a shard that stops renewing loses its databases within this. */
export const LEASE_TTL_MS = 30_000;
/** Heartbeats and lease renewals run at a third of the TTL, so two missed rounds still hold. */
export const RENEW_EVERY_MS = LEASE_TTL_MS / 3;
const LEASE_INTERVAL = `${LEASE_TTL_MS / 1000} seconds`;

export interface Shard {
  name: string;
  url: string;
}

/**
 * The shards (every process serving SQLite registers itself with a name and an internal URL),
 * where each database is placed, and the renewable leases that make one shard at a time the
 * owner of an open database. All of it in PostgreSQL, so every replica sees the same picture.
 */
export class Shards {
  /** The leases this shard holds, with when each was last confirmed (a renewal round's start). */
  private readonly held = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly maxDatabases: number;
  private readonly logger: Logger | undefined;
  /** Why placement refuses right now (logged once when it starts), or undefined. */
  private refusing: Refusal['reason'] | undefined;

  constructor(
    private readonly db: Db,
    readonly self: Shard,
    options: { maxDatabases?: number; logger?: Logger } = {},
  ) {
    this.maxDatabases = options.maxDatabases ?? DEFAULT_MAX_DATABASES_PER_SHARD;
    this.logger = options.logger;
  }

  /** Registers this shard and keeps its heartbeat and leases fresh until stop(). */
  async start(): Promise<void> {
    // A shard that starts again takes placements again (a drain ends with its process).
    await this.heartbeat(true);
    this.timer = setInterval(() => void this.renew().catch(() => undefined), RENEW_EVERY_MS);
    this.timer.unref();
  }

  /** Stops renewing and releases the leases, except those of `keep` (they run out on their own). */
  async stop(keep: readonly number[] = []): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const released = [...this.held.keys()].filter((id) => !keep.includes(id));
    if (released.length > 0)
      await this.db
        .delete(sqliteLeases)
        .where(and(inArray(sqliteLeases.databaseId, released), eq(sqliteLeases.shard, this.self.name)));
    this.held.clear();
    leasesHeld.set(0);
    // Gone from placement at once (a restart registers again); the failover counts from now.
    await this.db
      .update(sqliteShards)
      .set({ heartbeatAt: new Date(0), leftAt: sql`now()` })
      .where(eq(sqliteShards.name, this.self.name));
  }

  /** A live shard by name (heartbeat within the TTL), or undefined. */
  async live(name: string): Promise<Shard | undefined> {
    const [row] = await this.db
      .select({ name: sqliteShards.name, url: sqliteShards.url })
      .from(sqliteShards)
      .where(and(eq(sqliteShards.name, name), gt(sqliteShards.heartbeatAt, freshSince())));
    return row;
  }

  /**
   * The shard a database lives on: its placement, or — for a database not placed yet — the live
   * shard with the fewest databases among those under the cap, claimed atomically. Placements are
   * serialized by a PostgreSQL advisory lock (a database is placed once, at its first use, so the
   * lock is rarely waited on): concurrent first uses agree, and no shard goes past its cap. When
   * no live shard has room (or none is live), a 503 with Retry-After.
   */
  async placementOf(databaseId: number, current: string | null): Promise<string> {
    if (current) return current;
    const [before] = await this.db
      .select({ shard: sqliteDatabases.shard })
      .from(sqliteDatabases)
      .where(eq(sqliteDatabases.id, databaseId));
    if (before?.shard) return before.shard; // placed since this replica read it: no lock to take
    const placed = await this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${PLACEMENT_LOCK_CLASS}, 0)`);
      const [row] = await tx
        .select({ shard: sqliteDatabases.shard })
        .from(sqliteDatabases)
        .where(eq(sqliteDatabases.id, databaseId));
      if (row?.shard) return row.shard; // placed by another replica meanwhile
      const [least] = await tx
        .execute<{ name: string; placed: number }>(
          sql`
        select s.name, count(d.id)::int as placed from ${sqliteShards} s
        left join ${sqliteDatabases} d on d.shard = s.name
        where s.heartbeat_at > ${freshSince()} and not s.draining
        group by s.name order by count(d.id), s.name limit 1`,
        )
        .then(rowsOf<{ name: string; placed: number }>);
      if (!least) return refused('no_shard');
      if (Number(least.placed) >= this.maxDatabases) return refused('full');
      await tx
        .update(sqliteDatabases)
        .set({ shard: least.name })
        .where(and(eq(sqliteDatabases.id, databaseId), isNull(sqliteDatabases.shard)));
      return least.name;
    });
    if (typeof placed === 'string') {
      this.refusing = undefined;
      return placed;
    }
    placementRefused.inc({ reason: placed.reason });
    // Said once when placement starts refusing (again), not at every call while it does.
    if (this.refusing !== placed.reason) {
      this.refusing = placed.reason;
      this.logger?.warn(
        { reason: placed.reason, maxDatabasesPerShard: this.maxDatabases },
        placed.reason === 'full'
          ? 'no SQLite shard has room for a new database: add shards or raise HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD'
          : 'no live SQLite shard to place a new database on',
      );
    }
    throw new AppError('CAPACITY', {
      message:
        placed.reason === 'full'
          ? 'No SQLite shard has room for a new database right now; try again later.'
          : 'No SQLite shard is running right now; try again shortly.',
      retryAfterSeconds: placed.reason === 'full' ? 30 : 5,
    });
  }

  /**
   * Takes (or keeps) the lease of a database for this shard. False when another shard holds a
   * live lease, or the database is not placed here (it moved): then this process must not open
   * the file.
   */
  async acquire(databaseId: number): Promise<boolean> {
    if (this.confirmed(databaseId)) return true;
    const startedAt = Date.now();
    // Expiry in PostgreSQL's clock, the one every shard's takeover is judged by.
    const rows = await this.db
      .execute<{ shard: string; prior: string | null }>(
        sql`
      with prior as (select shard from ${sqliteLeases} where database_id = ${databaseId})
      insert into ${sqliteLeases} (database_id, shard, expires_at)
      select ${databaseId}, ${this.self.name}, now() + ${LEASE_INTERVAL}::interval
      where exists (select 1 from ${sqliteDatabases} where id = ${databaseId} and shard = ${this.self.name})
      on conflict (database_id) do update set shard = excluded.shard, expires_at = excluded.expires_at
      where ${sqliteLeases.expiresAt} < now() or ${sqliteLeases.shard} = excluded.shard
      returning shard, (select shard from prior) as prior`,
      )
      .then(rowsOf<{ shard: string; prior: string | null }>);
    const row = rows[0];
    if (row?.shard !== this.self.name) {
      if (this.held.delete(databaseId)) leasesHeld.set(this.held.size);
      return false;
    }
    // Taken from another shard after its lease ran out, not handed over: that shard may still
    // ship what it had to the replica, so the new owner replicates into a new generation.
    if (row.prior !== null && row.prior !== this.self.name) this.takenOver.add(databaseId);
    this.held.set(databaseId, startedAt);
    leasesHeld.set(this.held.size);
    return true;
  }

  /** Whether the last acquire of `databaseId` took it over from another shard (asked once). */
  tookOver(databaseId: number): boolean {
    return this.takenOver.delete(databaseId);
  }

  private readonly takenOver = new Set<number>();

  /** Gives up the lease of one database (let go: moved, deleted, or its file closed). */
  async release(databaseId: number): Promise<void> {
    this.held.delete(databaseId);
    leasesHeld.set(this.held.size);
    await this.db
      .delete(sqliteLeases)
      .where(and(eq(sqliteLeases.databaseId, databaseId), eq(sqliteLeases.shard, this.self.name)));
  }

  /** Whether this shard holds the lease of `databaseId` (as of its last renewal). */
  holds(databaseId: number): boolean {
    return this.held.has(databaseId);
  }

  /**
   * Whether this shard may still act on its lease of `databaseId`: held, and renewed recently
   * enough that it cannot have expired for the others. A shard cut off from PostgreSQL stops
   * serving its databases a round before another shard may take them over.
   */
  confirmed(databaseId: number): boolean {
    const at = this.held.get(databaseId);
    return at !== undefined && Date.now() - at < LEASE_TTL_MS - RENEW_EVERY_MS;
  }

  /** Whether `databaseId` is placed on this shard now. */
  async isPlacedHere(databaseId: number): Promise<boolean> {
    const rows = await this.db
      .select({ id: sqliteDatabases.id })
      .from(sqliteDatabases)
      .where(and(eq(sqliteDatabases.id, databaseId), eq(sqliteDatabases.shard, this.self.name)));
    return rows.length > 0;
  }

  /** The databases placed on this shard. */
  async placedHere(): Promise<number[]> {
    const rows = await this.db
      .select({ id: sqliteDatabases.id })
      .from(sqliteDatabases)
      .where(eq(sqliteDatabases.shard, this.self.name));
    return rows.map((r) => r.id);
  }

  /** Of `ids`, the databases that are gone, or whose live lease another shard holds. */
  async ownedElsewhere(ids: number[]): Promise<Set<number>> {
    const [existing, heldElsewhere] = await Promise.all([
      this.db
        .select({ id: sqliteDatabases.id })
        .from(sqliteDatabases)
        .where(inArray(sqliteDatabases.id, ids)),
      this.db
        .select({ id: sqliteLeases.databaseId })
        .from(sqliteLeases)
        .where(
          and(
            inArray(sqliteLeases.databaseId, ids),
            ne(sqliteLeases.shard, this.self.name),
            gt(sqliteLeases.expiresAt, sql`now()`),
          ),
        ),
    ]);
    const alive = new Set(existing.map((r) => r.id));
    return new Set([...ids.filter((id) => !alive.has(id)), ...heldElsewhere.map((r) => r.id)]);
  }

  /** Of the databases this shard holds, those now placed elsewhere (or deleted). */
  async placedElsewhere(): Promise<number[]> {
    if (this.held.size === 0) return [];
    const ids = [...this.held.keys()];
    const here = await this.db
      .select({ id: sqliteDatabases.id })
      .from(sqliteDatabases)
      .where(and(inArray(sqliteDatabases.id, ids), eq(sqliteDatabases.shard, this.self.name)));
    const kept = new Set(here.map((r) => r.id));
    return ids.filter((id) => !kept.has(id));
  }

  private async heartbeat(starting = false): Promise<void> {
    await this.db
      .insert(sqliteShards)
      .values({ name: this.self.name, url: this.self.url })
      .onConflictDoUpdate({
        target: sqliteShards.name,
        set: {
          url: this.self.url,
          heartbeatAt: sql`now()`,
          leftAt: null,
          ...(starting ? { draining: false } : {}),
        },
      });
    // Back before a failover could place them elsewhere: they are served here again.
    if (starting)
      await this.db
        .update(sqliteDatabases)
        .set({ failoverBlocked: null })
        .where(and(eq(sqliteDatabases.shard, this.self.name), isNotNull(sqliteDatabases.failoverBlocked)));
  }

  /**
   * One round: the heartbeat, then every held lease pushed a TTL ahead. A lease lost (taken by
   * another shard after it expired, or gone with its deleted database) is told to `onLost`, so
   * the file is let go at once.
   */
  private async renew(): Promise<void> {
    const startedAt = Date.now();
    await this.heartbeat();
    // The leases of this round as it starts: one acquired while it runs is not in its answer,
    // and must not be taken for lost.
    const ids = [...this.held.keys()];
    if (ids.length > 0) {
      const renewed = await this.db
        .update(sqliteLeases)
        .set({ expiresAt: sql`now() + ${LEASE_INTERVAL}::interval` })
        .where(and(inArray(sqliteLeases.databaseId, ids), eq(sqliteLeases.shard, this.self.name)))
        .returning({ databaseId: sqliteLeases.databaseId });
      const kept = new Set(renewed.map((r) => r.databaseId));
      const lost = ids.filter((id) => {
        const at = this.held.get(id);
        return !kept.has(id) && at !== undefined && at <= startedAt; // not taken again meanwhile
      });
      for (const id of lost) this.held.delete(id);
      for (const id of kept)
        if (this.held.has(id)) this.held.set(id, Math.max(this.held.get(id)!, startedAt));
      leasesHeld.set(this.held.size);
      if (lost.length > 0) this.onLost?.(lost);
    }
    await this.onRenewed?.();
  }

  /** Told the databases whose lease this shard lost. */
  onLost: ((databaseIds: number[]) => void) | undefined;
  /** Runs after each renewal round (the shard's periodic checks). */
  onRenewed: (() => Promise<void>) | undefined;
}

/** Serializes placements (advisory lock class; see tokens.ts and users.ts for the others). */
export const PLACEMENT_LOCK_CLASS = 4204;
/** The databases one shard holds at most when no cap is configured (the config's default). */
export const DEFAULT_MAX_DATABASES_PER_SHARD = 500;

type Refusal = { reason: 'full' | 'no_shard' };
const refused = (reason: Refusal['reason']): Refusal => ({ reason });

const freshSince = () => new Date(Date.now() - LEASE_TTL_MS);

function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? (result as T[])) as T[];
}
