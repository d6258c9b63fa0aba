import { and, asc, count, eq, gt, isNull, ne, sql } from 'drizzle-orm';
import type { BlobStore } from '../blob/index.js';
import { dbOp, type Logger } from '../observability/index.js';
import { hashSecret, type Plan, type Platform } from '../platform/index.js';
import { CHANNELS, type Db } from '../store/index.js';
import { cappedPlan } from './grants.js';
import { moveDatabase } from './placement.js';
import { forgetReplicaSweep, queueReplicaSweep, runReplicaSweeps } from './replica-sweeps.js';
import { replicaKeyRoot } from './replication/replica-path.js';
import {
  sqliteDatabases,
  sqliteLeases,
  sqliteTokens,
  sqliteUsers,
  type SqliteDatabaseRow,
} from './tables.js';
import type { DatabaseFileIndex } from './token-routes.js';
import { SqliteTokens } from './tokens.js';

/** Where replicas live and how long their snapshots are kept (the shards' settings). */
export interface ReplicaSettings {
  /** HOSTPLANE_SQLITE_REPLICA_PREFIX: the replicas' key prefix in the blob bucket. */
  prefix: string;
  /** HOSTPLANE_SQLITE_RETENTION_HOURS: one retention per shard's Litestream, so per cluster. */
  retentionHours: number;
}

export const DEFAULT_REPLICA_SETTINGS: ReplicaSettings = { prefix: 'sqlite', retentionHours: 168 };

/**
 * After the lease a removed database had expires, its shard has let it go (and unregistered it
 * from Litestream): this margin covers that unregistration.
 */
const UNREGISTER_MARGIN_MS = 5_000;
const leaseEndOf = (expiresAt: Date) => new Date(expiresAt.getTime() + UNREGISTER_MARGIN_MS);

/** A database removed by removeDatabase. */
export interface RemovedDatabase {
  database: SqliteDatabaseRow;
  /**
   * Set when a shard held the database and its replica was deleted: until then, that shard's
   * Litestream may still write into the replica, so the caller sweeps it once more afterwards.
   */
  sweepReplicaAgainAt?: Date;
  /** Why the replica could not be deleted this time (then sweepReplicaAgainAt is set). */
  replicaError?: unknown;
}

/**
 * The databases as whole objects (what the SqliteDatabase controller manages): created with a
 * readwrite token, read with their pool size, removed with their tokens, users, sessions, file
 * entry and — unless kept — their replica in S3.
 */
export class SqliteDatabases {
  private readonly tokens: SqliteTokens;

  constructor(
    private readonly deps: {
      db: Db;
      platform: Platform;
      /** The site's file index: a database is one of its files. */
      files: DatabaseFileIndex;
      /** The bucket the replicas are in; none (or a local folder) when nothing replicates. */
      replicas: BlobStore | undefined;
      replica: ReplicaSettings;
    },
  ) {
    this.tokens = new SqliteTokens(deps.db, deps.platform);
  }

  get replicaSettings(): ReplicaSettings {
    return this.deps.replica;
  }

  async byId(id: number): Promise<SqliteDatabaseRow | undefined> {
    const [row] = await this.deps.db.select().from(sqliteDatabases).where(eq(sqliteDatabases.id, id));
    return row;
  }

  async bySitePath(siteId: number, path: string): Promise<SqliteDatabaseRow | undefined> {
    const [row] = await this.deps.db
      .select()
      .from(sqliteDatabases)
      .where(and(eq(sqliteDatabases.siteId, siteId), eq(sqliteDatabases.path, path)));
    return row;
  }

  /** Every database, oldest first (the resync's view). */
  list(): Promise<SqliteDatabaseRow[]> {
    return this.deps.db.select().from(sqliteDatabases).orderBy(asc(sqliteDatabases.id));
  }

  /** The site's databases (an owner deleting the site removes each). */
  ofSite(siteId: number): Promise<SqliteDatabaseRow[]> {
    return this.deps.db.select().from(sqliteDatabases).where(eq(sqliteDatabases.siteId, siteId));
  }

  /** The account's databases against its plan: how many, the largest file and the largest user pool. */
  async accountUsage(
    accountId: number,
  ): Promise<{ databases: number; largestBytes: number; largestUsers: number }> {
    const [files] = await this.deps.db
      .select({
        databases: count(),
        largestBytes: sql<number>`coalesce(max(${sqliteDatabases.sizeBytes}), 0)`.mapWith(Number),
      })
      .from(sqliteDatabases)
      .where(eq(sqliteDatabases.accountId, accountId));
    const pools = await this.deps.db
      .select({ users: count() })
      .from(sqliteUsers)
      .innerJoin(sqliteDatabases, eq(sqliteDatabases.id, sqliteUsers.databaseId))
      .where(eq(sqliteDatabases.accountId, accountId))
      .groupBy(sqliteUsers.databaseId);
    return {
      databases: files?.databases ?? 0,
      largestBytes: files?.largestBytes ?? 0,
      largestUsers: Math.max(0, ...pools.map((p) => p.users)),
    };
  }

  async userCount(databaseId: number): Promise<number> {
    const [row] = await this.deps.db
      .select({ n: count() })
      .from(sqliteUsers)
      .where(eq(sqliteUsers.databaseId, databaseId));
    return row?.n ?? 0;
  }

  /**
   * Creates the database at (site, path) — or adds to the one there — with a readwrite token
   * (`token`, minted by the caller and stored first, so a crash never loses it): the file entry
   * first, taken back if the install is refused, as the install route does.
   */
  async create(
    siteId: number,
    path: string,
    input: { token: string; tokenName: string; shard?: string; replicationEnabled: boolean },
  ): Promise<{ database: SqliteDatabaseRow; tokenId: number; created: boolean }> {
    const site = await this.deps.platform.getSite(siteId);
    if (!site) throw new Error(`site ${siteId} does not exist`);
    const added = await this.deps.files.registerDatabase(siteId, path);
    try {
      const installed = await this.tokens.install(site, {
        path,
        name: input.tokenName,
        permissions: 'readwrite',
        requireUserAuth: false,
        token: input.token,
        newDatabase: { shard: input.shard, replicationEnabled: input.replicationEnabled },
      });
      return { database: installed.database, tokenId: installed.record.id, created: installed.created };
    } catch (err) {
      if (added) await this.deps.files.unregisterDatabase(siteId, path);
      throw err;
    }
  }

  /**
   * The id and database of a token that is not revoked; undefined otherwise. A plain lookup: it
   * does not count as a use of the token (lastUsedAt stays).
   */
  async tokenOf(token: string): Promise<{ tokenId: number; databaseId: number } | undefined> {
    const [row] = await this.deps.db
      .select({ tokenId: sqliteTokens.id, databaseId: sqliteTokens.databaseId })
      .from(sqliteTokens)
      .where(and(eq(sqliteTokens.tokenHash, hashSecret(token)), isNull(sqliteTokens.revokedAt)));
    return row;
  }

  /**
   * Turns replication on or off; the owning shard registers or unregisters it with Litestream
   * within a lease round. Turned on again, it replicates into a new generation: the file went on
   * without the old replica, whose history no longer leads to it.
   */
  async setReplication(id: number, enabled: boolean): Promise<SqliteDatabaseRow | undefined> {
    const [row] = await this.deps.db
      .update(sqliteDatabases)
      .set({
        replicationEnabled: enabled,
        ...(enabled ? { replicaGeneration: sql`${sqliteDatabases.replicaGeneration} + 1` } : {}),
      })
      .where(and(eq(sqliteDatabases.id, id), ne(sqliteDatabases.replicationEnabled, enabled)))
      .returning();
    return row ?? (await this.byId(id));
  }

  /** Places the database on shard `to` (its owner lets it go; `to` restores it from the replica). */
  move(id: number, to: string): Promise<'moved' | 'already'> {
    return moveDatabase(this.deps.db, id, to);
  }

  /** The caps its calls apply: the plan's, or the database's own where lower (null: none). */
  async capsInEffect(
    database: SqliteDatabaseRow,
  ): Promise<{ maxSizeBytes: number | null; maxUsers: number | null; plan: Plan | undefined }> {
    const plan = (await this.deps.platform.getUsage(database.siteId))?.plan;
    const capped = plan ? cappedPlan(plan, database) : undefined;
    return {
      maxSizeBytes: capped ? capped.maxSqliteBytes : database.maxSizeBytes,
      maxUsers: capped ? capped.maxSqliteUsers : database.maxUsers,
      plan,
    };
  }

  /**
   * Sets the database's own caps (null: the plan's) and tells every replica's grant cache, which
   * holds the caps its calls apply, in the same transaction. Returns the row, or undefined when
   * it is gone.
   */
  async setCaps(
    id: number,
    caps: { maxSizeBytes: number | null; maxUsers: number | null },
  ): Promise<SqliteDatabaseRow | undefined> {
    return this.deps.db.transaction(async (tx) => {
      const [row] = await tx.update(sqliteDatabases).set(caps).where(eq(sqliteDatabases.id, id)).returning();
      if (row) await tx.execute(sql`select pg_notify(${CHANNELS.sqliteGrants}, ${String(row.siteId)})`);
      return row;
    });
  }

  /**
   * Removes a database: its file entry, then its row — tokens, users, sessions and lease go with
   * it (ON DELETE CASCADE), every replica's grant and session caches are told in the same
   * transaction, and the owning shard, losing the lease at its next renewal, lets the file go —
   * then, unless `keepReplica`, every lineage of its replica in S3. Undefined when it is gone.
   *
   * With `queueSweep`, the second sweep (after a held lease, or after the bucket failed) is a
   * row of sqlite_replica_sweeps written in the same transaction, which the api replicas' sweep
   * (`sweepReplicas`) carries out, even if this process dies; without it the caller sweeps again
   * (the cluster's SqliteDatabase controller does, through its resource's annotation).
   */
  async removeDatabase(
    id: number,
    options: { keepReplica: boolean; queueSweep?: boolean },
  ): Promise<RemovedDatabase | undefined> {
    const database = await this.byId(id);
    if (!database) return undefined;
    const queue = !options.keepReplica && options.queueSweep === true && this.deps.replicas?.kind === 's3';
    await this.deps.files.unregisterDatabase(database.siteId, database.path);
    const lease = await dbOp('sqlite_remove_database', () =>
      this.deps.db.transaction(async (tx) => {
        const [held] = await tx
          .select({ expiresAt: sqliteLeases.expiresAt })
          .from(sqliteLeases)
          .where(and(eq(sqliteLeases.databaseId, id), gt(sqliteLeases.expiresAt, sql`now()`)));
        await tx.delete(sqliteDatabases).where(eq(sqliteDatabases.id, id));
        await tx.execute(sql`select pg_notify(${CHANNELS.sqliteGrants}, ${String(database.siteId)})`);
        await tx.execute(sql`select pg_notify(${CHANNELS.sqliteSessions}, ${String(id)})`);
        // Due at once: if this process dies before the delete below, a sweep does it.
        if (queue) await queueReplicaSweep(tx, database, held ? leaseEndOf(held.expiresAt) : new Date());
        return held;
      }),
    );
    if (options.keepReplica) return { database };
    const leaseEnd = lease ? leaseEndOf(lease.expiresAt) : undefined;
    try {
      await this.removeReplica(database);
    } catch (err) {
      // The row is gone: the caller sweeps again (the bucket out of reach, say) rather than fail.
      return { database, sweepReplicaAgainAt: leaseEnd ?? new Date(), replicaError: err };
    }
    // Swept; a held lease keeps the queued sweep (due at its end), otherwise it is done.
    if (queue && !leaseEnd) await forgetReplicaSweep(this.deps.db, database.id);
    return { database, ...(leaseEnd ? { sweepReplicaAgainAt: leaseEnd } : {}) };
  }

  /** One pass of the deferred replica deletes `removeDatabase({queueSweep})` queued; how many were done. */
  sweepReplicas(logger: Logger): Promise<number> {
    if (this.deps.replicas?.kind !== 's3') return Promise.resolve(0);
    return runReplicaSweeps(this.deps.db, (database) => this.removeReplica(database), logger);
  }

  /** Deletes every object under the database's replica root (all lineages); returns how many. */
  async removeReplica(database: { id: number; siteId: number; path: string }): Promise<number> {
    const { replicas } = this.deps;
    if (replicas?.kind !== 's3') return 0; // replication needs S3: nothing was replicated
    // The trailing slash keeps `d1` from matching `d12`'s objects.
    const prefix = replicaKeyRoot(this.deps.replica.prefix, database);
    let removed = 0;
    for await (const object of replicas.list(prefix)) {
      await replicas.delete(object.key);
      removed++;
    }
    return removed;
  }
}
