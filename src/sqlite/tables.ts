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
});

// Ownership of an open database: one shard at a time, renewed while it serves the database.
export const sqliteLeases = pgTable('sqlite_leases', {
  databaseId: integer('database_id')
    .primaryKey()
    .references(() => sqliteDatabases.id, { onDelete: 'cascade' }),
  shard: text('shard').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});

export type SqliteDatabaseRow = typeof sqliteDatabases.$inferSelect;
export type SqliteTokenRow = typeof sqliteTokens.$inferSelect;
export type SqliteUserRow = typeof sqliteUsers.$inferSelect;
