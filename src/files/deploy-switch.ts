import { sql, type SQL } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { SiteUsage, UsageChange } from '../platform/index.js';
import type { Executor, Tx } from '../store/index.js';
import { assertFolderLimit } from './commit-file.js';
import { HIDDEN_FILE_NAME } from './listing.js';
import { assertWithinQuota } from './quota.js';
import { maxBytesFor, tooLargeFor } from './upload-rules.js';
import { MAX_FILE_BYTES } from './service.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/*
 * Switching a site's live file set to a deploy's manifest: one transaction under the site lock (the
 * caller's), so the edge (which reads site_files) sees either the old set or the new one. SQLite
 * databases (kind 'database') are never part of a manifest and stay where they are, with the
 * folders that hold them.
 */

/** The path, name, parent and depth columns of site_files, from a path column `p` (text). */
const partsOf = (p: SQL) => sql`
  ${p} as path,
  (string_to_array(${p}, '/'))[cardinality(string_to_array(${p}, '/'))] as name,
  nullif(array_to_string((string_to_array(${p}, '/'))[1:cardinality(string_to_array(${p}, '/')) - 1], '/'), '') as parent,
  cardinality(string_to_array(${p}, '/')) - 1 as depth`;

/** The folders a deploy's files and the site's databases need: path, name, parent and depth. */
const wantedFolders = (siteId: number, deployId: string) => sql`
  select distinct array_to_string(p[1:i], '/') as path, p[i] as name,
    nullif(array_to_string(p[1:i - 1], '/'), '') as parent, i - 1 as depth
  from (
    select string_to_array(path, '/') as p from deploy_files where deploy_id = ${deployId}
    union all
    select string_to_array(path, '/') from site_files where site_id = ${siteId}::int and kind = 'database'
  ) x cross join lateral generate_series(1, cardinality(p) - 1) as i`;

/**
 * Refuses a deploy with a path over its own type's size limit (10 MB, 50 MB for videos): a blob
 * named by a video and by a page must fit the page's limit too. Checked where sizes become known
 * (a blob the site already had at create, an upload) and again at every switch.
 */
export async function assertPathLimits(db: Executor, deployId: string): Promise<void> {
  const big = rowsOf<{ path: string; size: string }>(
    await db.execute(sql`select path, size::text from deploy_files
      where deploy_id = ${deployId} and size > ${MAX_FILE_BYTES}::bigint order by path collate "C"`),
  );
  const over = big.find((r) => Number(r.size) > maxBytesFor(r.path));
  if (over) throw tooLargeFor(over.path);
}

/** The live deploy of a site, if any. */
export async function liveDeployId(db: Executor, siteId: number): Promise<string | undefined> {
  const [row] = rowsOf<{ deploy_id: string }>(
    await db.execute(sql`select deploy_id from live_deploys where site_id = ${siteId}::int`),
  );
  return row?.deploy_id;
}

/**
 * Does the live file set differ from the live deploy's manifest (files API changes since, or no
 * deploy yet and files there)? Paths and blobs only: content types follow the path.
 */
export async function liveSetChanged(db: Executor, siteId: number, liveId: string | undefined) {
  const [row] = rowsOf<{ changed: boolean }>(
    await db.execute(
      liveId === undefined
        ? sql`select exists (select 1 from site_files where site_id = ${siteId}::int and kind = 'file') as changed`
        : // One full join by path (unique on either side): a path on one side only, or two blobs.
          sql`select exists (
              select 1 from (select path, hash from deploy_files where deploy_id = ${liveId}) d
              full join (select path, blob_key from site_files where site_id = ${siteId}::int and kind = 'file') l
                on l.path = d.path
              where d.path is null or l.path is null or l.blob_key is distinct from d.hash
            ) as changed`,
    ),
  );
  return row?.changed ?? false;
}

/**
 * Records what the files API left live as a deploy of source 'files_api' (state published), so
 * a later restore can bring it back. Runs under the site lock, before the live set is replaced.
 */
export async function snapshotLiveSet(tx: Tx, siteId: number, id: string): Promise<void> {
  await tx.execute(sql`
    insert into deploys (id, site_id, state, source, draft, file_count, bytes, finalized_at, published_at)
    select ${id}, ${siteId}::int, 'published', 'files_api', false, count(*)::int, coalesce(sum(size), 0), now(), now()
    from site_files where site_id = ${siteId}::int and kind = 'file'`);
  await tx.execute(sql`
    insert into deploy_files (deploy_id, site_id, path, hash, size, content_type)
    select ${id}, ${siteId}::int, path, blob_key, size, coalesce(content_type, 'application/octet-stream')
    from site_files where site_id = ${siteId}::int and kind = 'file'`);
}

/**
 * Replaces the site's files and folders with the deploy's manifest, keeping its SQLite databases;
 * checks the plan's limits against the new set and returns the counters' change for the caller
 * to record (one version bump, one NOTIFY). Marks the deploy live.
 */
export async function switchLiveSet(
  tx: Tx,
  usage: SiteUsage,
  upgradeUrl: string,
  deployId: string,
): Promise<UsageChange> {
  const siteId = usage.site.id;
  await assertPathLimits(tx, deployId);
  const [clash] = rowsOf<{ path: string; database: string }>(
    await tx.execute(sql`
      select f.path, s.path as database from deploy_files f
      join site_files s on s.site_id = ${siteId}::int and s.kind = 'database'
        and (s.path = f.path or starts_with(s.path, f.path || '/'))
      where f.deploy_id = ${deployId} limit 1`),
  );
  if (clash)
    throw new AppError('CONFLICT', {
      message:
        clash.path === clash.database
          ? `${clash.path} is a SQLite database of the site: a deploy never replaces one`
          : `${clash.path} is a folder holding the SQLite database ${clash.database}: a deploy cannot put a file there`,
    });
  // Only what differs is written: a file whose path, blob and type stay keeps its row (and its
  // Last-Modified); the others go, then the deploy's new files and the folders they need come in.
  await tx.execute(sql`
    delete from site_files s where s.site_id = ${siteId}::int and s.kind = 'file'
      and not exists (select 1 from deploy_files f where f.deploy_id = ${deployId} and f.path = s.path
        and f.hash = s.blob_key and f.size = s.size and f.content_type is not distinct from s.content_type)`);
  await tx.execute(sql`
    with wanted as (${wantedFolders(siteId, deployId)})
    delete from site_files s where s.site_id = ${siteId}::int and s.kind = 'folder'
      and not exists (select 1 from wanted w where w.path = s.path)`);
  await tx.execute(sql`
    insert into site_files (site_id, path, kind, name, parent, depth, size, blob_key, content_type)
    select ${siteId}::int, m.path, 'file', m.name, m.parent, m.depth, m.size, m.hash, m.content_type
    from (select ${partsOf(sql`path`)}, size, hash, content_type from deploy_files f where f.deploy_id = ${deployId}
      and not exists (select 1 from site_files s where s.site_id = ${siteId}::int and s.path = f.path)) m`);
  await tx.execute(sql`
    insert into site_files (site_id, path, kind, name, parent, depth)
    select ${siteId}::int, path, 'folder', name, parent, depth from (${wantedFolders(siteId, deployId)}) w
    on conflict do nothing`);
  const [set] = rowsOf<{ files: number; bytes: string; hidden: number; folders: number; databases: number }>(
    await tx.execute(sql`
      select count(*) filter (where kind = 'file')::int as files,
        coalesce(sum(size) filter (where kind = 'file'), 0)::text as bytes,
        count(*) filter (where kind = 'file' and name = ${HIDDEN_FILE_NAME})::int as hidden,
        count(*) filter (where kind = 'folder')::int as folders,
        count(*) filter (where kind = 'database')::int as databases
      from site_files where site_id = ${siteId}::int`),
  );
  const { site } = usage;
  const change = {
    files: set!.files + set!.databases - site.fileCount,
    bytes: Number(set!.bytes) - site.storageBytes,
    folders: set!.folders - site.folderCount,
    hiddenFiles: set!.hidden - site.hiddenFileCount,
  };
  // Shrinking is always allowed (a site over a lowered limit may still deploy fewer files).
  assertWithinQuota(usage, upgradeUrl, change.files, change.bytes);
  if (change.folders > 0) assertFolderLimit(usage, upgradeUrl, change.folders, site.folderCount);
  await tx.execute(sql`
    insert into live_deploys (site_id, deploy_id) values (${siteId}::int, ${deployId})
    on conflict (site_id) do update set deploy_id = excluded.deploy_id`);
  await tx.execute(sql`
    update deploys set state = 'published', published_at = coalesce(published_at, now()),
      finalized_at = coalesce(finalized_at, now())
    where id = ${deployId}`);
  return change;
}

/** Checks a deploy's set against the plan as if it replaced the live one (a draft's finalize). */
export async function assertSetFits(
  tx: Tx,
  usage: SiteUsage,
  upgradeUrl: string,
  deploy: { id: string; fileCount: number; bytes: number },
): Promise<void> {
  const siteId = usage.site.id;
  await assertPathLimits(tx, deploy.id);
  const [databases] = rowsOf<{ n: number }>(
    await tx.execute(
      sql`select count(*)::int as n from site_files where site_id = ${siteId}::int and kind = 'database'`,
    ),
  );
  const { site } = usage;
  assertWithinQuota(
    usage,
    upgradeUrl,
    deploy.fileCount + databases!.n - site.fileCount,
    deploy.bytes - site.storageBytes,
  );
}
