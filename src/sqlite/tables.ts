import {
  bigint,
  boolean,
  index,
  integer,
  pgTable,
  serial,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
// Foreign keys are schema-level links, the one reach into another domain's tables lint allows.
import { accounts, sites } from '../platform/tables.js';

// The SQLite control plane in PostgreSQL: which databases exist and where they live, the scoped
// tokens that reach them, and each database's end-user pool. The databases' rows are in their
// own files, owned by one shard at a time.

/**
 * pending: not opened by an owner yet; replicating: registered with Litestream; off: replication
 * disabled or unavailable (no S3 or no litestream binary); restoring: the owner is restoring it from
 * the replica; restore_failed: a replica exists but could not be restored (not served);
 * register_failed: Litestream refused it (not served: a write must not be acknowledged unreplicated).
 */
export const REPLICATION_STATES = [
  'pending',
  'replicating',
  'off',
  'restoring',
  'restore_failed',
  'register_failed',
] as const;
export type ReplicationState = (typeof REPLICATION_STATES)[number];

/** Why a database last moved: a lost shard's failover, a drain, or a pin in its resource. */
export const MOVE_REASONS = ['failover', 'drain', 'pin'] as const;
export type MoveReason = (typeof MOVE_REASONS)[number];
/** Why a lost shard's database stayed: no live shard with room, or no replica to restore from. */
export const FAILOVER_BLOCKS = ['no_capacity', 'no_replica'] as const;
export type FailoverBlock = (typeof FAILOVER_BLOCKS)[number];

export const sqliteDatabases = pgTable(
  'sqlite_databases',
  {
    id: serial('id').primaryKey(),
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    // The plan's database count is per account.
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    path: text('path').notNull(),
    // The shard the database is placed on (null until placed).
    shard: text('shard'),
    // Last figures the owner reported, for listings and placement.
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull().default(0),
    version: bigint('version', { mode: 'number' }).notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    // Litestream replication to S3 (off: the file on the shard's volume is the only copy).
    replicationEnabled: boolean('replication_enabled').notNull().default(true),
    // Where the owner's replication stands: see REPLICATION_STATES.
    replicationState: text('replication_state', { enum: REPLICATION_STATES }).notNull().default('pending'),
    // The last time Litestream reported the replica in step with the file, as the owner saw it.
    replicatedAt: timestamp('replicated_at', { withTimezone: true }),
    // The earliest time a point-in-time restore can reach (the oldest snapshot kept).
    restorableFrom: timestamp('restorable_from', { withTimezone: true }),
    // The replica's lineage: a point-in-time restore starts a new one beside the old, so two
    // histories never share one replica path (the old stays readable for an undo).
    replicaGeneration: integer('replica_generation').notNull().default(0),
    // Caps of this database below its plan's (a SqliteDatabase's spec); null: the plan's apply.
    maxSizeBytes: bigint('max_size_bytes', { mode: 'number' }),
    maxUsers: integer('max_users'),
    // The last move to another shard: from where, when and why (a failover, a drain, a pin), so
    // the SqliteDatabase resource can show it; null while it never moved.
    movedFrom: text('moved_from'),
    movedAt: timestamp('moved_at', { withTimezone: true }),
    moveReason: text('move_reason', { enum: MOVE_REASONS }),
    // Its shard is lost and the failover could not place it elsewhere (no shard with room, or
    // no replica to restore from); cleared when it moves or its shard starts again.
    failoverBlocked: text('failover_blocked', { enum: FAILOVER_BLOCKS }),
  },
  (t) => [
    uniqueIndex('sqlite_databases_site_path_key').on(t.siteId, t.path),
    index('sqlite_databases_account_idx').on(t.accountId),
  ],
);

export const sqliteTokens = pgTable(
  'sqlite_tokens',
  {
    id: serial('id').primaryKey(),
    databaseId: integer('database_id')
      .notNull()
      .references(() => sqliteDatabases.id, { onDelete: 'cascade' }),
    // sha256 of the token; the token itself is shown once.
    tokenHash: text('token_hash').notNull(),
    name: text('name').notNull(),
    permissions: text('permissions', { enum: ['read', 'readwrite'] }).notNull(),
    requiresUserAuth: boolean('requires_user_auth').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('sqlite_tokens_hash_key').on(t.tokenHash),
    index('sqlite_tokens_database_idx').on(t.databaseId),
  ],
);

export const sqliteUsers = pgTable(
  'sqlite_users',
  {
    id: serial('id').primaryKey(),
    databaseId: integer('database_id')
      .notNull()
      .references(() => sqliteDatabases.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    displayName: text('display_name'),
    // argon2id (PHC string).
    passwordHash: text('password_hash').notNull(),
    role: text('role', { enum: ['admin', 'user'] }).notNull(),
    disabled: boolean('disabled').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastLoginAt: timestamp('last_login_at', { withTimezone: true }),
  },
  (t) => [uniqueIndex('sqlite_users_database_email_key').on(t.databaseId, t.email)],
);

export const sqliteSessions = pgTable(
  'sqlite_sessions',
  {
    id: serial('id').primaryKey(),
    userId: integer('user_id')
      .notNull()
      .references(() => sqliteUsers.id, { onDelete: 'cascade' }),
    databaseId: integer('database_id')
      .notNull()
      .references(() => sqliteDatabases.id, { onDelete: 'cascade' }),
    // sha256 of the 64-hex-character session token.
    tokenHash: text('token_hash').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('sqlite_sessions_hash_key').on(t.tokenHash),
    index('sqlite_sessions_user_idx').on(t.userId),
  ],
);

// Every process with the sqlite role registers here; a shard that stops heartbeating is gone.
export const sqliteShards = pgTable('sqlite_shards', {
  name: text('name').primaryKey(),
  url: text('url').notNull(),
  startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
  heartbeatAt: timestamp('heartbeat_at', { withTimezone: true }).notNull().defaultNow(),
  // Drained (`hostplane admin drain-shard`): gets no new placements until it starts again.
  draining: boolean('draining').notNull().default(false),
  // When it stopped gracefully (its leases released, its heartbeat cleared); null while running.
  // A failover counts a stopped shard's absence from here, a silent one's from its heartbeat.
  leftAt: timestamp('left_at', { withTimezone: true }),
});

// Ownership of an open database: one shard at a time, renewed while it serves the database.
export const sqliteLeases = pgTable('sqlite_leases', {
  databaseId: integer('database_id')
    .primaryKey()
    .references(() => sqliteDatabases.id, { onDelete: 'cascade' }),
  shard: text('shard').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});

/**
 * Replicas to delete again, later: a removed database whose shard held its lease may have its
 * Litestream write a few more objects until the lease runs out, and a bucket out of reach fails
 * the first delete. One row per removed database (its row is gone, so no foreign key); any api
 * replica claims a due row, deletes the replica root, then the row.
 */
export const sqliteReplicaSweeps = pgTable(
  'sqlite_replica_sweeps',
  {
    databaseId: integer('database_id').primaryKey(),
    siteId: integer('site_id').notNull(),
    path: text('path').notNull(),
    // Due from then; a claim moves it forward, so a replica that dies mid-sweep leaves it due again.
    sweepAfter: timestamp('sweep_after', { withTimezone: true }).notNull(),
    attempts: integer('attempts').notNull().default(0),
  },
  (t) => [index('sqlite_replica_sweeps_due').on(t.sweepAfter)],
);

export type SqliteDatabaseRow = typeof sqliteDatabases.$inferSelect;
export type SqliteTokenRow = typeof sqliteTokens.$inferSelect;
export type SqliteUserRow = typeof sqliteUsers.$inferSelect;
