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
    const result = await dbOp('commit_deploy_blob', () =>
      db.transaction(async (tx) => {
        // Uploads of one deploy take turns here, so the last one sees that nothing is missing.
        const [locked] = rowsOf<{ state: DeployState }>(
          await tx.execute(sql`select state from deploys where id = ${deployId} for update`),
        );
        if (!locked) throw new AppError('NOT_FOUND', { message: `Deploy ${deployId} not found` });
        const [verdict] = rowsOf<{ kept: boolean; updated: number }>(
          await tx.execute(sql`
            with claim as (
              insert into blob_claims (hash) values (${hash}::text)
              on conflict (hash) do update set claimed_until = blob_claims.claimed_until
              returning generation
            ),
            updated as (
              update deploy_files set size = ${size}::bigint
              where deploy_id = ${deployId} and hash = ${hash} and size is null
                and (select generation from claim) = ${generation}::bigint
              returning 1
            )
            select (select generation from claim) = ${generation}::bigint as kept,
              (select count(*) from updated)::int as updated`),
        );
        if (!verdict?.kept) return undefined;
        const [after] = rowsOf<{ state: DeployState; remaining: number }>(
          await tx.execute(sql`
            with remaining as (
              select count(distinct hash)::int as n from deploy_files where deploy_id = ${deployId} and size is null
            )
            update deploys set bytes = bytes + ${size}::bigint * ${verdict.updated}::int,
              state = case when state = 'uploading' and (select n from remaining) = 0 then 'ready' else state end
            where id = ${deployId}
            returning state, (select n from remaining) as remaining`),
        );
        return after!;
      }),
    );
    if (result) return result;
    if (attempt >= MAX_COMMIT_ATTEMPTS) throw new Error(`blob ${hash} kept being claimed by the sweeper`);
    blobClaimEventsTotal.inc({ event: 'upload_rewrote' });
  }
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
