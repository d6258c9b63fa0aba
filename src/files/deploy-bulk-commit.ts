import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { blobKeyForHash, type BlobStore } from '../blob/index.js';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { SiteUsage } from '../platform/index.js';
import type { Db } from '../store/index.js';
import { blobClaimEventsTotal, deployEventsTotal } from './metrics.js';
import { pendingBytes } from './deploy-retention.js';
import type { Deploy } from './deploy-rows.js';
import { assertPendingWithinStorage } from './quota.js';
import { maxBytesFor } from './upload-rules.js';

/*
 * The bulk upload's side of deploy-blobs.ts: many verified blobs of one deploy recorded in a few
 * statements instead of several per blob, under the same claim protocol (blob-claims.ts): the
 * generations are read before the bytes are written, and one statement records every blob whose
 * generation is unchanged (the others are written again and retried).
 */

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

const CLAIM_POLL_MS = 100;
const MAX_COMMIT_ATTEMPTS = 3;
/** Blobs at least this big ask the blob store whether it has the bytes before writing them (as deploy-blobs.ts). */
const HEAD_FIRST_MIN_BYTES = 256 * 1024;
/** Blob store writes of one group at once. */
const WRITES_AT_ONCE = 16;
/**
 * Blobs recorded by one statement: the next ones are written meanwhile. A statement costs a few
 * milliseconds whatever its size, and a local blob store writes small blobs as rows of its
 * database (a fraction of a millisecond each, no longer a file's creation to overlap with), so a
 * bulk request (at most MAX_BULK_PARTS) is recorded in one or two statements rather than one per
 * 64 blobs; groups of large blobs still overlap their writes with the records.
 */
const RECORD_CHUNK = 512;

/** What the manifest says of one hash: the limit of its narrowest path, and whether it is received. */
export interface HashInfo {
  limit: number;
  narrowest: string;
  uploaded: boolean;
  /** Manifest rows naming it that still lack their size (the deploy's bytes count each). */
  missingPaths: number;
  /** Its claim generation when read (blob-claims.ts), and whether a sweeper's claim was live. */
  generation: number;
  claimed: boolean;
}

/** What a bulk upload reads before it writes: each hash's manifest rows and claim, and the pending bytes. */
export interface HashesRead {
  info: Map<string, HashInfo>;
  /** The site's bytes in unpublished deploys (undefined: no hash of the deploy was named). */
  pending: number | undefined;
}

/** A verified blob to record, with what was read of it before its bytes are written. */
export type PartToCommit = VerifiedPart & Pick<HashInfo, 'missingPaths' | 'generation' | 'claimed'>;

export interface VerifiedPart {
  hash: string;
  bytes: Buffer;
}

/**
 * The manifest's view of some hashes of a deploy (absent: no path of the deploy has it), their
 * claim generations (read before their bytes are written, as commitBatch needs) and the site's
 * pending bytes: one statement (PGlite runs each on the main thread, where the writes wait).
 */
export async function hashInfo(db: Db, deploy: Deploy, hashes: string[]): Promise<HashesRead> {
  const info = new Map<string, HashInfo>();
  if (hashes.length === 0) return { info, pending: undefined };
  const rows = rowsOf<{
    hash: string;
    path: string;
    size: string | null;
    generation: string;
    claimed: boolean;
    pending: string;
  }>(
    await db.execute(sql`select f.hash, f.path, f.size::text, coalesce(c.generation, 0)::text as generation,
        coalesce(c.claimed_until > now(), false) as claimed,
        (select coalesce(sum(bytes), 0) from deploys
          where site_id = ${deploy.siteId}::int and state in ('uploading', 'ready', 'draft'))::text as pending
      from deploy_files f left join blob_claims c on c.hash = f.hash
      where f.site_id = ${deploy.siteId}::int and f.deploy_id = ${deploy.id}
        and f.hash = any(${sql.param(hashes)}::text[])
      order by f.path collate "C"`),
  );
  for (const r of rows) {
    const known = info.get(r.hash);
    const limit = maxBytesFor(r.path);
    if (!known) {
      info.set(r.hash, {
        limit,
        narrowest: r.path,
        uploaded: r.size !== null,
        missingPaths: r.size === null ? 1 : 0,
        generation: Number(r.generation),
        claimed: r.claimed,
      });
      continue;
    }
    if (limit < known.limit) Object.assign(known, { limit, narrowest: r.path });
    if (r.size === null) known.missingPaths += 1;
    else known.uploaded = true;
  }
  return { info, pending: rows[0] === undefined ? undefined : Number(rows[0].pending) };
}

/**
 * Writes and records verified blobs of a deploy, in order, within the storage of unpublished
 * deploys. Blobs before one that would pass the limit are recorded, and that one's refusal is
 * returned beside the hashes recorded.
 */
export async function commitParts(
  db: Db,
  blobs: BlobStore,
  usage: SiteUsage,
  upgradeUrl: string,
  deploy: Deploy,
  parts: PartToCommit[],
  /** The pending bytes read with the parts' claims (hashInfo), else read now. */
  pendingRead?: number,
): Promise<{ recorded: string[]; refusal?: unknown }> {
  if (parts.length === 0) return { recorded: [] };
  if (new Set(parts.map((p) => p.hash)).size !== parts.length) throw new Error('a batch names a blob twice');
  let pending = pendingRead ?? (await pendingBytes(db, deploy.siteId));
  let fits = 0;
  let refusal: unknown;
  for (const part of parts) {
    try {
      assertPendingWithinStorage(usage, upgradeUrl, pending, part.bytes.length * part.missingPaths);
    } catch (err) {
      refusal = err;
      break;
    }
    pending += part.bytes.length * part.missingPaths;
    fits++;
  }
  const recorded = await commitBatch(db, blobs, deploy, parts.slice(0, fits));
  return refusal === undefined ? { recorded } : { recorded, refusal };
}

async function commitBatch(db: Db, blobs: BlobStore, deploy: Deploy, parts: PartToCommit[]) {
  let todo = parts;
  const recorded: string[] = [];
  for (let attempt = 1; todo.length > 0; attempt++) {
    if (attempt > MAX_COMMIT_ATTEMPTS)
      throw new Error(`blobs ${todo.map((p) => p.hash).join(', ')} kept being claimed by the sweeper`);
    if (attempt > 1) blobClaimEventsTotal.inc({ event: 'upload_rewrote' }, todo.length);
    // The first attempt uses the generations hashInfo read (before any write), unless a sweeper
    // held a claim then: that one waits for the claims to end, as every retry does.
    const generations =
      attempt === 1 && !todo.some((p) => p.claimed)
        ? new Map(todo.map((p) => [p.hash, p.generation]))
        : await unclaimedGenerations(
            db,
            todo.map((p) => p.hash),
          );
    const kept = new Set(await writeAndRecord(db, blobs, deploy, todo, generations));
    recorded.push(...todo.filter((p) => kept.has(p.hash)).map((p) => p.hash));
    todo = todo.filter((p) => !kept.has(p.hash));
  }
  deployEventsTotal.inc({ event: 'blob_uploaded' }, recorded.length);
  return recorded;
}

/**
 * Writes the blobs (WRITES_AT_ONCE at a time, in order) and records them RECORD_CHUNK at a time,
 * each chunk once its own writes are done: the statement of one chunk runs while the next
 * chunk's bytes are being written, instead of after every write. Returns the hashes recorded.
 */
async function writeAndRecord(
  db: Db,
  blobs: BlobStore,
  deploy: Deploy,
  parts: VerifiedPart[],
  generations: Map<string, number>,
): Promise<string[]> {
  const writes = writeAll(blobs, parts);
  const kept: string[] = [];
  try {
    for (let i = 0; i < parts.length; i += RECORD_CHUNK) {
      await Promise.all(writes.written.slice(i, i + RECORD_CHUNK));
      kept.push(...(await recordBatch(db, deploy, parts.slice(i, i + RECORD_CHUNK), generations)));
    }
  } catch (err) {
    // No blob written from here on would be recorded: the writes not started yet are skipped.
    writes.stopped = true;
    throw err;
  } finally {
    // The writes under way end before the request answers (none left behind).
    await Promise.allSettled(writes.written);
  }
  return kept;
}

/**
 * Starts every write, at most WRITES_AT_ONCE at a time and in order: one promise per part, each
 * already handled (a failure is seen where the caller awaits it, never as an unhandled rejection).
 * The first failed write, or the caller setting `stopped` (a failed record), stops the writes not
 * started yet: they reject without writing (else they would write blobs nobody records, for the
 * sweep to remove, and hold the error's answer back until they end).
 */
function writeAll(blobs: BlobStore, parts: VerifiedPart[]): { written: Promise<void>[]; stopped: boolean } {
  let active = 0;
  const waiting: (() => void)[] = [];
  const writes = { written: [] as Promise<void>[], stopped: false };
  writes.written = parts.map(async (p) => {
    if (active >= WRITES_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
    if (writes.stopped) {
      waiting.shift()?.();
      // Rejected, not resolved: a blob not written is never recorded, whoever awaits it.
      throw new Error(`blob ${p.hash} not written: an earlier write or record of the batch failed`);
    }
    active++;
    try {
      const key = blobKeyForHash(p.hash);
      if (!(p.bytes.length >= HEAD_FIRST_MIN_BYTES && (await blobs.head(key)))) await blobs.put(key, p.bytes);
    } catch (err) {
      writes.stopped = true;
      throw err;
    } finally {
      active--;
      waiting.shift()?.();
    }
  });
  for (const w of writes.written) w.catch(() => undefined);
  return writes;
}

/**
 * One statement for the whole batch (see commitDeployBlob): the claim rows are upserted in hash
 * order (two batches lock them in one order: no deadlock), the manifest rows of each blob whose
 * generation is unchanged get their size, and the deploy's count of missing hashes drops by the
 * hashes whose rows this statement filled (a concurrent upload of the same bytes fills none twice).
 * Returns the hashes whose generation held.
 */
async function recordBatch(
  db: Db,
  deploy: Deploy,
  parts: VerifiedPart[],
  generations: Map<string, number>,
): Promise<string[]> {
  // Array parameters, not a VALUES list of a parameter per field (see deploy-create.ts's BATCH).
  const input = sql`select * from unnest(${sql.param(parts.map((p) => p.hash))}::text[],
    ${sql.param(parts.map((p) => p.bytes.length))}::bigint[],
    ${sql.param(parts.map((p) => generations.get(p.hash) ?? 0))}::bigint[])`;
  const [row] = rowsOf<{ kept: string[] | null }>(
    await dbOp('commit_deploy_blobs', () =>
      db.execute(sql`
        with input (hash, size, generation) as (${input}),
        claim as (
          insert into blob_claims (hash) select hash from input order by hash
          on conflict (hash) do update set claimed_until = blob_claims.claimed_until
          returning hash, generation
        ),
        kept as (
          select i.hash, i.size from input i join claim c on c.hash = i.hash and c.generation = i.generation
        ),
        -- Joined to input (whose row count the planner knows), not to kept: the planner takes
        -- kept for a row or two and the rows still without a size for one (committed deploys
        -- have none), and so scanned kept once per manifest row (300 × 300 for a 300-file deploy).
        updated as (
          update deploy_files f set size = i.size from input i
          where f.site_id = ${deploy.siteId}::int and f.deploy_id = ${deploy.id} and f.hash = i.hash
            and f.size is null
            and exists (select 1 from claim c where c.hash = i.hash and c.generation = i.generation)
          returning f.hash, f.size
        ),
        n as (select count(distinct hash)::int as hashes, coalesce(sum(size), 0)::bigint as bytes from updated),
        deploy as (
          update deploys set missing = missing - (select hashes from n), bytes = bytes + (select bytes from n),
            state = case when state = 'uploading' and missing = (select hashes from n) then 'ready' else state end,
            -- An upload is activity (the idle sweep and the cap's displacement read it), even one
            -- whose blobs were all there already.
            last_activity_at = now()
          where id = ${deploy.id}
          returning state
        )
        select (select coalesce(json_agg(hash), '[]'::json) from kept) as kept, (select count(*) from deploy) as touched`),
    ),
  );
  return row?.kept ?? [];
}

/** Each blob's claim generation, once no sweeper holds a live claim on any of them. */
async function unclaimedGenerations(db: Db, hashes: string[]): Promise<Map<string, number>> {
  for (;;) {
    const rows = rowsOf<{ hash: string; generation: string; claimed: boolean }>(
      await db.execute(sql`
        select v.hash, coalesce(c.generation, 0)::text as generation,
          coalesce(c.claimed_until > now(), false) as claimed
        from unnest(${sql.param(hashes)}::text[]) as v (hash) left join blob_claims c on c.hash = v.hash`),
    );
    if (!rows.some((r) => r.claimed)) return new Map(rows.map((r) => [r.hash, Number(r.generation)]));
    blobClaimEventsTotal.inc({ event: 'upload_waited' });
    await delay(CLAIM_POLL_MS);
  }
}

/** The first `max` hashes the deploy still lacks (sorted), and how many it lacks in all. */
export async function missingHashes(
  db: Db,
  deploy: Deploy,
  max: number,
): Promise<{ missing: string[]; state: string; remaining: number }> {
  const [row] = rowsOf<{ state: string; remaining: number; missing: string[] }>(
    await db.execute(sql`select state, missing as remaining, array(
        select distinct hash from deploy_files
        where site_id = ${deploy.siteId}::int and deploy_id = ${deploy.id} and size is null
        order by hash limit ${max}::int) as missing
      from deploys where id = ${deploy.id}`),
  );
  if (!row) throw new AppError('NOT_FOUND', { message: `Deploy ${deploy.id} not found` });
  return row;
}
