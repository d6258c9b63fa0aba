import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
// A foreign key is a schema-level link, the one reach into another domain's tables lint allows.
import { sites } from '../platform/tables.js';

// The per-site file index (the bytes live in the blob store).
export const siteFiles = pgTable(
  'site_files',
  {
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    // Collation "C" (migration 0007; drizzle cannot declare it): byte order on any server locale,
    // so that a folder's contents are one range of the primary key (see service.ts, inFolder).
    path: text('path').notNull(),
    // 'database': a SQLite database of the site (its bytes live on a shard, never in the blob store).
    kind: text('kind', { enum: ['file', 'folder', 'database'] }).notNull(),
    name: text('name').notNull(),
    parent: text('parent'),
    depth: integer('depth').notNull(),
    size: bigint('size', { mode: 'number' }).notNull().default(0),
    // sha256 hex of the bytes: the blob key and the strong ETag. Null for folders.
    blobKey: text('blob_key'),
    contentType: text('content_type'),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.siteId, t.path] }),
    // The files list's order (spec 2.1: depth, folders first, name; see listing.ts), so that a page
    // is read off the index instead of sorting the whole site. Only listed rows (.gitkeep files are
    // not). `kind` and `size` last: they never decide the order (path is unique) but make the index
    // hold every column a page shows, so a page is one index scan, with no lookup per row.
    index('site_files_order_idx')
      .on(
        t.siteId,
        t.depth,
        sql`(${t.kind} <> 'folder')`,
        sql`(lower(${t.name}) collate "C")`,
        sql`${t.name} collate "C"`,
        sql`${t.path} collate "C"`,
        t.kind,
        t.size,
      )
      .where(sql`${t.kind} <> 'file' or ${t.name} <> '.gitkeep'`),
    index('site_files_blob_idx').on(t.blobKey),
  ],
);

export type SiteFileRow = typeof siteFiles.$inferSelect;

/**
 * One row per blob an upload or the sweeper has touched: how uploads and the orphan-blob sweeper
 * agree on a blob without holding a lock across an S3 call (see blob-claims.ts).
 */
export const blobClaims = pgTable('blob_claims', {
  hash: text('hash').primaryKey(),
  // Bumped each time a sweeper claims the blob for deletion. An upload records it before writing
  // the bytes and commits only if it is unchanged, so a deletion in between is always noticed.
  generation: bigint('generation', { mode: 'number' }).notNull().default(0),
  // While in the future, a sweeper may be deleting the blob: an upload of these bytes waits.
  claimedUntil: timestamp('claimed_until', { withTimezone: true }),
});

/**
 * Deploys: manifests of path → blob, made through /api/v1/deploys (source 'api') or recorded
 * lazily from what the files API left live (source 'files_api', see deploy-switch.ts). One of
 * them may be live (live_deploys); the live file set itself is always site_files.
 */
export const deploys = pgTable(
  'deploys',
  {
    // 12 characters of [a-z2-7]: the first label of the preview host `<id>--<slug>.<sites domain>`.
    id: text('id').primaryKey(),
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    state: text('state', { enum: ['uploading', 'ready', 'draft', 'published'] }).notNull(),
    source: text('source', { enum: ['api', 'files_api'] }).notNull(),
    draft: boolean('draft').notNull().default(false),
    fileCount: integer('file_count').notNull(),
    // Distinct hashes not uploaded yet: kept by each blob commit, so none counts the manifest.
    missing: integer('missing').notNull().default(0),
    // Sum of the sizes known so far (all of them once the deploy is ready).
    bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
    // The key that made it (prefix shown to users; the id is a plain reference, not a foreign key:
    // a revoked or deleted key leaves the history as it was).
    keyId: integer('key_id'),
    keyPrefix: text('key_prefix'),
    // What made it (deploy-client.ts): the console, `hostplane deploy`, the MCP tools, or another
    // client of the API; null for files_api records and deploys made before it was recorded.
    client: text('client', { enum: ['console', 'cli', 'mcp', 'api'] }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    finalizedAt: timestamp('finalized_at', { withTimezone: true }),
    publishedAt: timestamp('published_at', { withTimezone: true }),
    // What the client said about it (`hostplane deploy --message`), at most 500 characters.
    message: text('message'),
    // The last create or blob upload: an unfinished deploy idle for longer expires (deploys.ts).
    lastActivityAt: timestamp('last_activity_at', { withTimezone: true }).notNull().defaultNow(),
    // Paths added, changed and removed against the live file set, when it was created and again at
    // its last switch (null: recorded before these were counted, or a files_api record).
    filesAdded: integer('files_added'),
    filesChanged: integer('files_changed'),
    filesRemoved: integer('files_removed'),
    // The create's Idempotency-Key (deploy-idempotency.ts), unique per site while the deploy exists,
    // and the SHA-256 of its request as the server read it: a repeat with the same key and request
    // answers this deploy, another request with the key is refused.
    idempotencyKey: text('idempotency_key'),
    idempotencyFingerprint: text('idempotency_fingerprint'),
  },
  (t) => [
    index('deploys_site_created_idx').on(t.siteId, t.createdAt),
    uniqueIndex('deploys_site_idempotency_key_idx')
      .on(t.siteId, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} is not null`),
    // The expiry sweep and the displacement at the cap read unfinished deploys by their activity.
    index('deploys_unfinished_activity_idx')
      .on(t.lastActivityAt)
      .where(sql`state in ('uploading', 'ready')`),
  ],
);

/** One row per path of a deploy's manifest; `size` is null until the blob is known for the site. */
export const deployFiles = pgTable(
  'deploy_files',
  {
    deployId: text('deploy_id')
      .notNull()
      .references(() => deploys.id, { onDelete: 'cascade' }),
    // Denormalized: which blobs a site already has is one index range (site_id, hash).
    siteId: integer('site_id').notNull(),
    // Collate "C" like site_files.path (migration 0020; drizzle cannot declare a column's collation).
    path: text('path').notNull(),
    hash: text('hash').notNull(),
    size: bigint('size', { mode: 'number' }),
    contentType: text('content_type').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.deployId, t.path] }),
    index('deploy_files_site_hash_idx').on(t.siteId, t.hash),
    index('deploy_files_hash_idx').on(t.hash),
  ],
);

/** The deploy whose manifest the site's live file set was last switched to. */
export const liveDeploys = pgTable('live_deploys', {
  siteId: integer('site_id')
    .primaryKey()
    .references(() => sites.id, { onDelete: 'cascade' }),
  deployId: text('deploy_id')
    .notNull()
    .references(() => deploys.id),
  /**
   * Bytes held only by the site's other published deploys (kept for rollback): distinct blobs
   * outside this deploy's manifest, as the last prune (every switch) left them. Bounded by the
   * plan's storage limit (deploy-retention.ts).
   */
  rollbackBytes: bigint('rollback_bytes', { mode: 'number' }).notNull().default(0),
  /** How many published deploys besides the live one are kept. */
  rollbackDeploys: integer('rollback_deploys').notNull().default(0),
});
