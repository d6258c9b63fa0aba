import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  pgTable,
  serial,
  text,
  timestamp,
  uniqueIndex,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core';

// The platform's tables: accounts, sites, keys, sessions, custom domains. Other domains reach them
// only through src/platform/index.ts (and, for foreign keys in their own tables.ts, `sites.id`).
export const accounts = pgTable('accounts', {
  id: serial('id').primaryKey(),
  email: text('email').notNull().unique(),
  plan: text('plan').notNull().default('free'),
  // argon2id (src/passwords); null until an invitation is accepted (or for accounts made by
  // `admin create-site`, which sign in only once a reset sets a password).
  passwordHash: text('password_hash'),
  // Open sign-up: set when the address is proven; until then the account cannot create a site.
  emailVerifiedAt: timestamp('email_verified_at', { withTimezone: true }),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

export const sites = pgTable(
  'sites',
  {
    id: serial('id').primaryKey(),
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    // Quota counters, changed only in the same transaction as the file index (row-locked).
    fileCount: integer('file_count').notNull().default(0),
    storageBytes: bigint('storage_bytes', { mode: 'number' }).notNull().default(0),
    // Kept beside the quota counters so that a files list needs no count over the site: folder
    // rows (also the folder limit's count) and files named .gitkeep (never listed).
    folderCount: integer('folder_count').notNull().default(0),
    hiddenFileCount: integer('hidden_file_count').notNull().default(0),
    // When the counter reconciliation last recounted the site (counters.ts): sites are visited
    // oldest first, so every site comes round and replicas claim different ones.
    countersCheckedAt: timestamp('counters_checked_at', { withTimezone: true }).notNull().defaultNow(),
    // Bumped on every change to the site's files; edges key their path caches on it.
    version: bigint('version', { mode: 'number' }).notNull().default(0),
    // Cluster mode: set when the Site resource was deleted with deletionPolicy Retain. The site keeps
    // its files and keys but is not served, and the controller does not recreate its resource.
    detachedAt: timestamp('detached_at', { withTimezone: true }),
    // Cluster mode: the uid of the Site resource that controls this site. Claimed once; another
    // resource pointing at the site (a copied annotation) is refused instead of taking it over.
    resourceUid: text('resource_uid'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('sites_slug_key').on(t.slug),
    index('sites_account_idx').on(t.accountId),
    uniqueIndex('sites_resource_uid_key').on(t.resourceUid),
    index('sites_counters_checked_idx').on(t.countersCheckedAt),
  ],
);

export const customDomains = pgTable('custom_domains', {
  hostname: text('hostname').primaryKey(),
  siteId: integer('site_id')
    .notNull()
    .references(() => sites.id, { onDelete: 'cascade' }),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    id: serial('id').primaryKey(),
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: ['permanent', 'temporary'] }).notNull(),
    // sha256 of the key; the key itself is shown once and never stored.
    keyHash: text('key_hash').notNull(),
    keyPrefix: text('key_prefix').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    // Temporary keys only (and always): the session that minted the key. The key dies with it:
    // every way a session ends deletes its row, and this cascade deletes its keys in the same
    // statement (docs/developers/security.md "Temporary keys and the session that minted them").
    sessionId: integer('session_id').references((): AnyPgColumn => accountSessions.id, {
      onDelete: 'cascade',
    }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('api_keys_hash_key').on(t.keyHash),
    index('api_keys_site_idx').on(t.siteId),
    index('api_keys_session_idx').on(t.sessionId),
    check('api_keys_temporary_session_check', sql`(${t.kind} = 'temporary') = (${t.sessionId} is not null)`),
  ],
);

export const accountSessions = pgTable(
  'account_sessions',
  {
    id: serial('id').primaryKey(),
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    // bearer (API and CLI, `Authorization: Bearer`) or browser (the session cookie, CSRF-checked).
    kind: text('kind', { enum: ['bearer', 'browser'] })
      .notNull()
      .default('bearer'),
    userAgent: text('user_agent'),
    // Minted by the operator (`hostplane admin session`), not by a sign-in: shown as such, and it
    // needs no sudo confirmation (the operator holds the server).
    operator: boolean('operator').notNull().default(false),
    // Sudo mode: when the owner last proved the password (or a TOTP code) in this session: a
    // sign-in, or POST /api/v1/account/sudo. Site deletion and new permanent keys need it recent.
    confirmedAt: timestamp('confirmed_at', { withTimezone: true }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('account_sessions_hash_key').on(t.tokenHash),
    index('account_sessions_account_idx').on(t.accountId),
  ],
);

// One-time tokens mailed to an owner: an invitation, an address verification, a password reset.
// Stored as sha256 hashes, used once (used_at), each with its own lifetime.
export const accountTokens = pgTable(
  'account_tokens',
  {
    id: serial('id').primaryKey(),
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: ['invite', 'verify', 'reset'] }).notNull(),
    tokenHash: text('token_hash').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('account_tokens_hash_key').on(t.tokenHash),
    index('account_tokens_account_idx').on(t.accountId),
  ],
);

// A custom domain an owner asked for, waiting for its DNS TXT proof (`_hostplane.<hostname>`).
export const domainClaims = pgTable(
  'domain_claims',
  {
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    hostname: text('hostname').notNull(),
    token: text('token').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('domain_claims_site_host_key').on(t.siteId, t.hostname)],
);

// Secrets every replica shares without extra configuration (e.g. the key of the submitters' IP
// hashes, the shards' proxy secret): generated once by whichever process needs one first.
export const serverSecrets = pgTable('server_secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

// TOTP second factor (RFC 6238). The secret must be read back to check codes, so it is encrypted
// (AES-256-GCM with a server secret), not hashed. `enabledAt` null: set up but not confirmed yet.
// `lastStep`: the time step of the last code accepted, so a code is never accepted twice.
export const accountTotp = pgTable('account_totp', {
  accountId: integer('account_id')
    .primaryKey()
    .references(() => accounts.id, { onDelete: 'cascade' }),
  secretEncrypted: text('secret_encrypted').notNull(),
  enabledAt: timestamp('enabled_at', { withTimezone: true }),
  lastStep: bigint('last_step', { mode: 'number' }),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

// Single-use recovery codes of an account with TOTP (sha256 hashes; shown once at creation).
export const accountRecoveryCodes = pgTable(
  'account_recovery_codes',
  {
    id: serial('id').primaryKey(),
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    codeHash: text('code_hash').notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('account_recovery_codes_hash_key').on(t.accountId, t.codeHash),
    index('account_recovery_codes_account_idx').on(t.accountId),
  ],
);

// The second step of a sign-in with TOTP: the password was right, a code must follow. Short-lived,
// single-use, stored hashed here so that any replica finishes it; `session` is what the first step asked.
export const accountSignInChallenges = pgTable(
  'account_sign_in_challenges',
  {
    id: serial('id').primaryKey(),
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    session: text('session', { enum: ['bearer', 'cookie'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('account_sign_in_challenges_hash_key').on(t.tokenHash)],
);

/**
 * The live edge processes (every process that serves sites on PostgreSQL), each holding a lease it
 * renews: a deploy switch waits for the acknowledgement of every one whose lease runs (see
 * edge-presence.ts). A process killed without a goodbye stops being waited for when its lease ends.
 */
export const edgeProcesses = pgTable('edge_processes', {
  id: text('id').primaryKey(),
  leaseUntil: timestamp('lease_until', { withTimezone: true }).notNull(),
});
