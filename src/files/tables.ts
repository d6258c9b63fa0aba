import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
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
