import { sql, type SQL } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { SiteUsage } from '../platform/index.js';
import type { Executor, Tx } from '../store/index.js';
import { claimStateSql, type ClaimState } from './blob-claims.js';
import { assertWithinQuota } from './quota.js';
import { ancestors, pathParts } from './paths.js';
import { HIDDEN_FILE_NAME } from './listing.js';
import { quotaRejectionsTotal } from './metrics.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/** The commit found that a sweeper claimed the blob after the upload read its state: write it again. */
export class BlobReclaimed extends Error {
  constructor(readonly hash: string) {
    super(`blob ${hash} was claimed by the sweeper after its bytes were written`);
  }
}

export interface BeforeUpload extends ClaimState {
  /** Size of what is at the path now (0 when there is nothing, or a folder). */
  existingSize: number;
  /** Something (a file, or a folder: the commit refuses that) is at the path. */
  exists: boolean;
}

/**
 * One statement, before any bytes are written: what is at the path now (for the early quota
 * refusal) and the blob's claim state (for the commit's check).
 */
export async function readBeforeUpload(
  db: Executor,
  siteId: number,
  sitePath: string,
  hash: string,
): Promise<BeforeUpload> {
  const [row] = rowsOf<{ size: string | null; generation: string; claimed: boolean }>(
    await db.execute(sql`select
      (select size::text from site_files where site_id = ${siteId} and path = ${sitePath}) as size,
      ${claimStateSql(hash)}`),
  );
  return {
    existingSize: Number(row?.size ?? 0),
    exists: row?.size != null,
    generation: Number(row?.generation ?? 0),
    claimed: row?.claimed ?? false,
  };
}

export interface CommitInput {
  siteId: number;
  sitePath: string;
  hash: string;
  size: number;
  contentType: string;
  /** The blob's generation read before its bytes were written. */
  generation: number;
}

interface Verdict {
  blob_kept: boolean;
  existing_kind: 'file' | 'folder' | 'database' | null;
  existing_size: string;
  file_ancestor: string | null;
  written: number;
  folders_created: number;
}

/** What a commit did to the site's counters (see UsageChange). */
export interface CommitDeltas {
  files: number;
  bytes: number;
  folders: number;
  hiddenFiles: number;
}

/**
 * Records a file whose bytes are already in the blob store, under the site's lock (held by the
 * caller's transaction): one statement checks the blob's claim generation, a folder at the path, a
 * file among its ancestors and the plan's limits, and only when all pass upserts the file row and
 * creates the missing folders. Returns the usage deltas for the caller to record.
 */
export async function commitFileRow(
  tx: Tx,
  usage: SiteUsage,
  upgradeUrl: string,
  input: CommitInput,
): Promise<CommitDeltas> {
  const { siteId, sitePath, hash, size, contentType, generation } = input;
  const { site, plan } = usage;
  const parts = pathParts(sitePath);
  const parents = ancestors(sitePath);
  const inParents: SQL = parents.length
    ? sql`path in (${sql.join(
        parents.map((p) => sql`${p}`),
        sql`, `,
      )})`
    : sql`false`;
  const folderValues: SQL = parents.length
    ? sql`values ${sql.join(
        parents.map((p) => {
          const f = pathParts(p);
          return sql`(${p}::text, ${f.name}::text, ${f.parent}::text, ${f.depth}::int)`;
        }),
        sql`, `,
      )}`
    : sql`select null::text, null::text, null::text, null::int where false`;
  const [verdict] = rowsOf<Verdict>(
    await tx.execute(sql`
      with claim as (
        -- Takes the row lock the sweeper's claim takes: see blob-claims.ts.
        insert into blob_claims (hash) values (${hash}::text)
        on conflict (hash) do update set claimed_until = blob_claims.claimed_until
        returning generation
      ),
      existing as (select kind, size from site_files where site_id = ${siteId} and path = ${sitePath}),
      file_ancestor as (
        select path from site_files where site_id = ${siteId} and kind <> 'folder' and ${inParents} limit 1
      ),
      verdict as (
        select
          (select generation from claim) = ${generation}::bigint as blob_kept,
          (select kind from existing) as existing_kind,
          coalesce((select size from existing), 0) as existing_size,
          (select path from file_ancestor) as file_ancestor
      ),
      ok as (
        select 1 from verdict
        where blob_kept and (existing_kind is null or existing_kind = 'file') and file_ancestor is null
          and (${plan.maxFiles}::bigint is null or existing_kind is not null
               or ${site.fileCount}::bigint + 1 <= ${plan.maxFiles}::bigint)
          and (${plan.maxStorageBytes}::bigint is null or ${size}::bigint <= existing_size
               or ${site.storageBytes}::bigint + ${size}::bigint - existing_size <= ${plan.maxStorageBytes}::bigint)
      ),
      upserted as (
        insert into site_files (site_id, path, kind, name, parent, depth, size, blob_key, content_type)
        select ${siteId}::int, ${sitePath}::text, 'file', ${parts.name}::text, ${parts.parent}::text, ${parts.depth}::int, ${size}::bigint, ${hash}::text, ${contentType}::text
        from ok
        on conflict (site_id, path) do update set size = excluded.size, blob_key = excluded.blob_key,
          content_type = excluded.content_type, updated_at = now()
        returning 1
      ),
      folders as (
        insert into site_files (site_id, path, kind, name, parent, depth)
        select ${siteId}::int, v.path, 'folder', v.name, v.parent, v.depth from (${folderValues}) as v (path, name, parent, depth)
        where exists (select 1 from ok)
        on conflict do nothing
        returning 1
      )
      select blob_kept, existing_kind, existing_size::text as existing_size, file_ancestor,
        (select count(*) from upserted)::int as written,
        (select count(*) from folders)::int as folders_created
      from verdict`),
  );
  if (!verdict) throw new Error('the commit statement returned no row');
  if (!verdict.blob_kept) throw new BlobReclaimed(hash);
  if (verdict.existing_kind === 'folder')
    throw new AppError('CONFLICT', { message: `A folder already exists at ${sitePath}` });
  if (verdict.existing_kind === 'database')
    throw new AppError('CONFLICT', {
      message: `${sitePath} is a SQLite database: change it through the SQLite API`,
    });
  if (verdict.file_ancestor !== null)
    throw new AppError('CONFLICT', {
      message: `${verdict.file_ancestor} is a file, so it cannot contain ${sitePath}`,
    });
  const filesDelta = verdict.existing_kind ? 0 : 1;
  const bytesDelta = size - Number(verdict.existing_size);
  if (verdict.written === 0) {
    assertWithinQuota(usage, upgradeUrl, filesDelta, bytesDelta);
    throw new Error(`the commit of ${sitePath} wrote nothing and no check explains why`);
  }
  // The site's folder count was read under the lock: exact, and no count over the site's rows.
  assertFolderLimit(usage, upgradeUrl, verdict.folders_created, site.folderCount);
  const hiddenFiles = filesDelta === 1 && parts.name === HIDDEN_FILE_NAME ? 1 : 0;
  return { files: filesDelta, bytes: bytesDelta, folders: verdict.folders_created, hiddenFiles };
}

/**
 * Folders are not files for the quota, but a site may hold at most as many folders as its plan
 * allows files, so folder rows cannot grow without bound. (Thrown after the insert: the caller's
 * transaction rolls it back.)
 */
export function assertFolderLimit(
  usage: SiteUsage,
  upgradeUrl: string,
  created: number,
  before: number,
): void {
  const limit = usage.plan.maxFiles;
  if (created === 0 || limit === null) return;
  if (before + created <= limit) return;
  quotaRejectionsTotal.inc({ limit: 'folders' });
  throw new AppError('FOLDER_LIMIT', {
    message: `Your ${usage.plan.name} plan allows ${limit} folders per site. Delete folders or upgrade your plan.`,
    current: before,
    limit,
    plan: usage.plan.type,
    upgradeUrl,
  });
}
