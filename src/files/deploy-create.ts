import { sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import type { SiteUsage } from '../platform/index.js';
import type { Tx } from '../store/index.js';
import { recordChanges } from './deploy-changes.js';
import { makeRoomForOne } from './deploy-lifecycle.js';
import { KeyTaken, type Idempotency } from './deploy-idempotency.js';
import { pendingBytes } from './deploy-retention.js';
import { contentTypeFor, type FileTypes } from './file-types.js';
import type { DeployClient } from './deploy-client.js';
import { ancestors, extensionOf, normalizeSitePath } from './paths.js';
import { assertPendingWithinStorage, assertWithinQuota } from './quota.js';
import { maxBytesFor, tooLargeFor } from './upload-rules.js';
import { MAX_DEPLOY_FILES } from './limits.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/** A manifest holds at most this many files (and its body at most MAX_MANIFEST_BYTES). */
export { MAX_DEPLOY_FILES } from './limits.js';
/** How many refused paths a message names (the rest are counted). */
const NAMED = 20;
/**
 * Rows per statement. Each statement takes its rows as a few array parameters (unnest), not as a
 * VALUES list of one parameter per field: PostgreSQL parses and plans a 300-row VALUES list of
 * 1,200 parameters in several times the time it takes to insert the rows (PGlite: ~20 ms vs ~4).
 */
const BATCH = 2000;

/** What a deploy is made of (POST /api/v1/deploys). */
export interface CreateInput {
  files: Record<string, string>;
  draft: boolean;
  /** none: the manifest is the whole site; live: it is laid over the live files. */
  base: 'none' | 'live';
  /** With base live: paths (files, or folders and everything in them) of the live site to drop. */
  removed: string[];
  /** Declared sizes by path: checked before the deploy exists (each type's limit, the storage). */
  sizes: Record<string, number> | undefined;
  message: string | null;
}

const shortField = (raw: string) => (raw.length > 80 ? `${raw.slice(0, 80)}…` : raw);

/**
 * Validates a manifest: canonical paths (upload rules), no path twice, no path inside another
 * file. Every file of a type that is not served is named in one refusal.
 */
export function normalizeManifest(files: Record<string, string>, types: FileTypes): Map<string, string> {
  const { upload, video } = types;
  const manifest = new Map<string, string>();
  const badTypes: string[] = [];
  for (const [raw, hash] of Object.entries(files)) {
    const field = `files["${shortField(raw)}"]`;
    const sitePath = normalizeSitePath(raw, field);
    const ext = extensionOf(sitePath);
    if (!(video.has(ext) ? video : upload).has(ext))
      badTypes.push(`${sitePath} (${ext ? `.${ext}` : 'no extension'})`);
    if (manifest.has(sitePath))
      throw new AppError('INVALID_PATH', { message: `${field} names ${sitePath} a second time` });
    manifest.set(sitePath, hash);
  }
  if (badTypes.length > 0) {
    const more = badTypes.length > NAMED ? ` and ${badTypes.length - NAMED} more` : '';
    throw new AppError('INVALID_FILE_TYPE', {
      message:
        `${badTypes.length} file${badTypes.length === 1 ? ' has a type' : 's have types'} that is not allowed: ` +
        `${badTypes.slice(0, NAMED).join(', ')}${more}. Allowed: ${[...upload, ...video].join(', ')}.`,
    });
  }
  assertNoFileHoldsAnother(manifest, () => '');
  return manifest;
}

function assertNoFileHoldsAnother(paths: Map<string, string>, advice: (file: string) => string): void {
  for (const sitePath of paths.keys()) {
    const file = ancestors(sitePath).find((a) => paths.has(a));
    if (file)
      throw new AppError('INVALID_PATH', {
        message: `${file} is a file, so it cannot contain ${sitePath}${advice(file)}`,
      });
  }
}

/**
 * The checks that need no database: declared sizes against each type's limit (every file over
 * it named at once), `removed` only with base live and never naming a listed path. Returns the
 * canonical removed paths and the declared sizes by canonical path.
 */
export function precheck(
  input: CreateInput,
  manifest: Map<string, string>,
): { removed: string[]; declared: Map<string, number> } {
  const declared = new Map<string, number>();
  if (input.sizes !== undefined) {
    const over: Array<{ path: string; size: number; maxBytes: number }> = [];
    for (const [raw, size] of Object.entries(input.sizes)) {
      const sitePath = normalizeSitePath(raw, `sizes["${shortField(raw)}"]`);
      if (!manifest.has(sitePath))
        throw new AppError('INVALID_PATH', { message: `sizes names ${sitePath}, which files does not list` });
      declared.set(sitePath, size);
      if (size > maxBytesFor(sitePath)) over.push({ path: sitePath, size, maxBytes: maxBytesFor(sitePath) });
    }
    if (over.length > 0) {
      over.sort((a, b) => (a.path < b.path ? -1 : 1));
      throw new AppError('DEPLOY_FILES_TOO_LARGE', { files: over });
    }
  }
  if (input.removed.length > 0 && input.base !== 'live')
    throw new AppError('INVALID_REQUEST', {
      message: 'removed needs base: "live" (without it the manifest is the whole site already)',
    });
  const removed = input.removed.map((raw) => normalizeSitePath(raw, `removed["${shortField(raw)}"]`));
  const both = removed.find((p) => manifest.has(p));
  if (both !== undefined)
    throw new AppError('INVALID_PATH', { message: `${both} is both in files and in removed` });
  return { removed, declared };
}

/**
 * With base live: the live files the manifest does not name and `removed` does not drop, added
 * to it (the site's own blobs: their sizes are known). Refuses a listed path inside a live file,
 * or a listed file over a live folder, unless `removed` drops the live side.
 */
export async function layOverLive(
  tx: Tx,
  siteId: number,
  manifest: Map<string, string>,
  removed: string[],
): Promise<Map<string, string>> {
  const live = rowsOf<{ path: string; hash: string }>(
    await tx.execute(sql`select path, blob_key as hash from site_files
      where site_id = ${siteId}::int and kind = 'file' order by path collate "C"`),
  );
  // A set and each path's ancestors (at most 32 segments): linear in the live files, whatever
  // the length of `removed` (up to MAX_DEPLOY_FILES), not live × removed.
  const removedSet = new Set(removed);
  const dropped = (p: string) => removedSet.has(p) || ancestors(p).some((a) => removedSet.has(a));
  const merged = new Map(manifest);
  for (const { path, hash } of live) if (!merged.has(path) && !dropped(path)) merged.set(path, hash);
  assertNoFileHoldsAnother(merged, (file) =>
    manifest.has(file) ? '' : `: ${file} is a file of the live site, list it in removed to replace it`,
  );
  return merged;
}

/**
 * The deploy's rows, in the create's transaction: the cap of unfinished deploys (the least
 * recently active one makes room), the claims of the blobs the site already has and their sizes,
 * the per-path limits, the storage of unpublished deploys, and the change against the live set.
 * Returns the hashes still to upload.
 */
export async function insertDeploy(
  tx: Tx,
  ctx: {
    id: string;
    usage: SiteUsage;
    upgradeUrl: string;
    keyId: number | null;
    keyPrefix: string | null;
    input: CreateInput;
    client: DeployClient;
    removed: string[];
    declared: Map<string, number>;
    manifest: Map<string, string>;
    /** The request's Idempotency-Key: KeyTaken when another deploy of the site holds it. */
    idempotency?: Idempotency;
  },
): Promise<string[]> {
  const { id, usage, upgradeUrl, input } = ctx;
  const siteId = usage.site.id;
  const manifest =
    input.base === 'live' ? await layOverLive(tx, siteId, ctx.manifest, ctx.removed) : ctx.manifest;
  if (manifest.size > MAX_DEPLOY_FILES)
    throw new AppError('INVALID_REQUEST', {
      message: `With the live files it keeps, this deploy would hold ${manifest.size} files: at most ${MAX_DEPLOY_FILES}`,
    });
  // Early refusal; the binding check (databases counted) is the switch's.
  assertWithinQuota(usage, upgradeUrl, manifest.size - usage.site.fileCount, 0);
  const rows = [...manifest].map(([path, hash]) => ({ path, hash, contentType: contentTypeFor(path) }));
  const hashes = [...new Set(manifest.values())].sort();
  // The transaction's first write: a create holding the same Idempotency-Key waits here for the
  // other's commit (the unique index), holding no lock the other could wait for, then finds its row.
  const key = ctx.idempotency;
  const keyed = await tx.execute(sql`
    insert into deploys (id, site_id, state, source, draft, file_count, key_id, key_prefix, message, client,
      idempotency_key, idempotency_fingerprint)
    values (${id}, ${siteId}::int, 'uploading', 'api', ${input.draft}, ${rows.length}::int,
      ${ctx.keyId}::int, ${ctx.keyPrefix}, ${input.message}, ${ctx.client},
      ${key?.key ?? null}, ${key?.fingerprint ?? null})
    on conflict (site_id, idempotency_key) where idempotency_key is not null do nothing
    returning id`);
  if (rowsOf(keyed).length === 0) throw new KeyTaken();
  await makeRoomForOne(tx, siteId, id);
  // The claim rows' locks (sorted: no deadlock between two creates) keep a sweeper from
  // claiming a blob between the reference check below and this commit (see blob-claims.ts).
  // Only hashes the site references are claimed: a missing one is claimed by its upload's
  // commit, and a hash nobody uploads leaves no row behind. The size lookup below reads only
  // claimed hashes, so a blob it finds is one no sweeper can take before this commits.
  const claimed = new Set<string>();
  for (let i = 0; i < hashes.length; i += BATCH) {
    const batch = hashes.slice(i, i + BATCH);
    const got = await tx.execute(sql`
      insert into blob_claims (hash)
      select v.hash from unnest(${sql.param(batch)}::text[]) as v (hash)
      where exists (select 1 from site_files s where s.site_id = ${siteId}::int and s.blob_key = v.hash)
        or exists (select 1 from deploy_files d where d.site_id = ${siteId}::int and d.hash = v.hash and d.size is not null)
      order by v.hash
      on conflict (hash) do update set claimed_until = blob_claims.claimed_until
      returning hash`);
    for (const r of rowsOf<{ hash: string }>(got)) claimed.add(r.hash);
  }
  // The rows come back with the sizes found: the checks and counts below read them here, not
  // with a statement each (PGlite runs every statement on the main thread).
  const inserted: Array<{ path: string; hash: string; size: number | null }> = [];
  for (let i = 0; i < rows.length; i += BATCH) {
    const batch = rows.slice(i, i + BATCH);
    const got = await tx.execute(sql`
      insert into deploy_files (deploy_id, site_id, path, hash, size, content_type)
      select ${id}, ${siteId}::int, v.path, v.hash, case when v.claimed then coalesce(
        (select size from site_files s where s.blob_key = v.hash and s.site_id = ${siteId}::int and s.kind = 'file' limit 1),
        (select size from deploy_files d where d.site_id = ${siteId}::int and d.hash = v.hash and d.size is not null limit 1)
      ) end, v.content_type
      from unnest(${sql.param(batch.map((r) => r.path))}::text[], ${sql.param(batch.map((r) => r.hash))}::text[],
        ${sql.param(batch.map((r) => r.contentType))}::text[],
        ${sql.param(batch.map((r) => claimed.has(r.hash)))}::boolean[]) as v (path, hash, content_type, claimed)
      returning path, hash, size::text`);
    for (const r of rowsOf<{ path: string; hash: string; size: string | null }>(got))
      inserted.push({ path: r.path, hash: r.hash, size: r.size === null ? null : Number(r.size) });
  }
  // Blobs the site already has fill their sizes at once: each path must fit its own limit (the
  // first in path order, as assertPathLimits names it).
  const over = inserted
    .filter((r) => r.size !== null && r.size > maxBytesFor(r.path))
    .sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)))[0];
  if (over) throw tooLargeFor(over.path);
  const unknown = inserted.filter((r) => r.size === null);
  const missing = new Set(unknown.map((r) => r.hash)).size;
  const known = inserted.reduce((sum, r) => sum + (r.size ?? 0), 0);
  await tx.execute(sql`
    update deploys set bytes = ${known}::bigint, missing = ${missing}::int,
      state = ${missing > 0 ? 'uploading' : 'ready'}
    where id = ${id}`);
  // The bytes it already has (blobs the site holds) count at once, uploads at their commit; the
  // declared sizes of the blobs still to come count now too (early refusals: uploads count for real).
  const declaredToCome = unknown.reduce((sum, r) => sum + (ctx.declared.get(r.path) ?? 0), 0);
  const total = await pendingBytes(tx, siteId);
  assertPendingWithinStorage(usage, upgradeUrl, total - known, known + declaredToCome);
  // Every size known or declared: the new set against the plan's storage, as the switch will.
  if (unknown.every((r) => ctx.declared.has(r.path)))
    assertWithinQuota(usage, upgradeUrl, 0, known + declaredToCome - usage.site.storageBytes);
  await recordChanges(tx, siteId, id);
  // The hashes to upload (the create's answer), each once, in order.
  return [...new Set(unknown.map((r) => r.hash))].sort();
}
