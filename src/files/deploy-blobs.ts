import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { blobKeyForHash, type BlobStore } from '../blob/index.js';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { claimStateSql } from './blob-claims.js';
import { blobClaimEventsTotal } from './metrics.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

const CLAIM_POLL_MS = 100;
const MAX_COMMIT_ATTEMPTS = 3;
/** Blobs at least this big ask the blob store whether it has the bytes before writing them. */
const HEAD_FIRST_MIN_BYTES = 256 * 1024;

export type DeployState = 'uploading' | 'ready' | 'draft' | 'published';

/**
 * Stores a blob whose hash was checked, and records its size on every manifest row that names it.
 * The claim protocol of blob-claims.ts: the generation is read before the bytes are written, and
 * the commit records them only if no sweeper claimed the blob in between (else they are written
 * again). Returns the deploy's state and how many hashes it still lacks.
 */
export async function commitDeployBlob(
  db: Db,
  blobs: BlobStore,
  deployId: string,
  hash: string,
  size: number,
  write: () => Promise<void>,
): Promise<{ state: DeployState; remaining: number }> {
  for (let attempt = 1; ; attempt++) {
    const generation = await unclaimedGeneration(db, hash);
    if (!(size >= HEAD_FIRST_MIN_BYTES && (await blobs.head(blobKeyForHash(hash))))) await write();
    // One statement, so one round trip and atomic without a transaction: the claim row's lock (the
    // sweeper's, see blob-claims.ts), the manifest rows, and the deploy's count of missing hashes. A
    // hash is counted once: a concurrent commit of the same bytes finds no null size left. Every
    // commit is activity (the idle sweep, deploy-lifecycle.ts).
    const [verdict] = rowsOf<{ kept: boolean; state: DeployState | null; missing: number | null }>(
      await dbOp('commit_deploy_blob', () =>
        db.execute(sql`
          with claim as (
            insert into blob_claims (hash) values (${hash}::text)
            on conflict (hash) do update set claimed_until = blob_claims.claimed_until
            returning generation = ${generation}::bigint as kept
          ),
          updated as (
            update deploy_files set size = ${size}::bigint
            where deploy_id = ${deployId} and hash = ${hash} and size is null and (select kept from claim)
            returning 1
          ),
          n as (select count(*)::int as rows from updated),
          deploy as (
            update deploys set
              missing = missing - case when (select rows from n) > 0 then 1 else 0 end,
              bytes = bytes + ${size}::bigint * (select rows from n),
              state = case when (select rows from n) > 0 and state = 'uploading' and missing = 1 then 'ready' else state end,
              last_activity_at = now()
            where id = ${deployId} and (select kept from claim)
            returning state, missing
          )
          select (select kept from claim) as kept, (select state from deploy) as state,
            (select missing from deploy) as missing`),
      ),
    );
    const result = !verdict?.kept
      ? undefined
      : verdict.state !== null && verdict.missing !== null
        ? { state: verdict.state, remaining: verdict.missing }
        : await progress(db, deployId);
    if (result) return result;
    if (attempt >= MAX_COMMIT_ATTEMPTS) throw new Error(`blob ${hash} kept being claimed by the sweeper`);
    blobClaimEventsTotal.inc({ event: 'upload_rewrote' });
  }
}

/** A deploy's state and how many distinct hashes it still lacks. */
export async function progress(db: Db, deployId: string): Promise<{ state: DeployState; remaining: number }> {
  const [row] = rowsOf<{ state: DeployState; remaining: number }>(
    await db.execute(sql`select state, missing as remaining from deploys where id = ${deployId}`),
  );
  if (!row) throw new AppError('NOT_FOUND', { message: `Deploy ${deployId} not found` });
  return row;
}

/** The blob's claim generation, once no sweeper holds a live claim on it. */
async function unclaimedGeneration(db: Db, hash: string): Promise<number> {
  for (;;) {
    const [row] = rowsOf<{ generation: string; claimed: boolean }>(
      await db.execute(sql`select ${claimStateSql(hash)}`),
    );
    if (!row?.claimed) return Number(row?.generation ?? 0);
    blobClaimEventsTotal.inc({ event: 'upload_waited' });
    await delay(CLAIM_POLL_MS);
  }
}
