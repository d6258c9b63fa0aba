import { and, eq, isNotNull, sql } from 'drizzle-orm';
import type { Db } from '../store/index.js';
import { blobClaims, deployFiles, siteFiles } from './tables.js';

/*
 * How uploads and the orphan-blob sweeper share a blob without holding a lock across an S3 call.
 *
 * Each blob has a row in blob_claims with a generation. The sweeper *claims* an unreferenced blob
 * (generation + 1, claimed_until = now + lease) in a short transaction, deletes the object with no
 * transaction open, then releases the claim. An upload reads the generation before it writes its
 * bytes (waiting while a claim is live), and its commit, in the same statement that records the
 * file, upserts the row (taking its lock) and records the file only if the generation is unchanged.
 * Any claim made after the upload's read therefore makes the commit fail; the upload writes its
 * bytes again and retries. The row lock orders a claim's reference check with a commit: whichever
 * comes second sees the other.
 *
 * A sweeper that dies mid-way leaves a claim that expires: it never sends a delete later than half
 * the lease after claiming, so an expired claim is safe to ignore (clock rates, not clock offsets,
 * matter: the deadline is measured on the sweeper's own monotonic clock).
 */

/** How long a sweeper's claim lasts in the database. */
export const CLAIM_LEASE_MS = 60_000;
/** A sweeper sends no delete later than this after claiming (half the lease: the safety margin). */
export const CLAIM_DELETE_DEADLINE_MS = CLAIM_LEASE_MS / 2;

export interface ClaimState {
  /** The generation an upload's commit must still find. */
  generation: number;
  /** A sweeper holds a live claim: the bytes may be deleted at any moment. */
  claimed: boolean;
}

/** SQL of the claim state of `hash`, for an upload's read before it writes the bytes. */
export const claimStateSql = (hash: string) => sql`
  coalesce((select ${blobClaims.generation}::text from ${blobClaims} where ${blobClaims.hash} = ${hash}), '0') as generation,
  coalesce((select ${blobClaims.claimedUntil} > now() from ${blobClaims} where ${blobClaims.hash} = ${hash}), false) as claimed`;

class Referenced extends Error {}

/**
 * Claims an unreferenced blob for deletion. Returns the claim's generation, or undefined when a
 * file references the blob or another sweeper holds a live claim on it.
 */
export async function claimForDeletion(
  db: Db,
  hash: string,
): Promise<{ generation: number } | { skipped: 'referenced' | 'claimed' }> {
  try {
    return await db.transaction(async (tx) => {
      // The upsert locks the row an upload's commit also upserts; the reference check is a later
      // statement, so its snapshot includes any commit that held the row before us.
      const [claim] = await tx
        .insert(blobClaims)
        .values({
          hash,
          generation: 1,
          claimedUntil: sql`now() + ${`${CLAIM_LEASE_MS} milliseconds`}::interval`,
        })
        .onConflictDoUpdate({
          target: blobClaims.hash,
          set: {
            generation: sql`${blobClaims.generation} + 1`,
            claimedUntil: sql`now() + ${`${CLAIM_LEASE_MS} milliseconds`}::interval`,
          },
          setWhere: sql`${blobClaims.claimedUntil} is null or ${blobClaims.claimedUntil} <= now()`,
        })
        .returning({ generation: blobClaims.generation });
      if (!claim) return { skipped: 'claimed' as const };
      // A live file, or a deploy's uploaded blob (deploys.ts: a restore needs its bytes).
      const [ref] = await tx
        .select({ n: sql`1` })
        .from(siteFiles)
        .where(eq(siteFiles.blobKey, hash))
        .limit(1);
      const [deployRef] = ref
        ? [ref]
        : await tx
            .select({ n: sql`1` })
            .from(deployFiles)
            .where(and(eq(deployFiles.hash, hash), isNotNull(deployFiles.size)))
            .limit(1);
      // Rolled back: a referenced blob keeps its generation, so no upload has to retry for it.
      if (deployRef) throw new Referenced();
      return { generation: claim.generation };
    });
  } catch (err) {
    if (err instanceof Referenced) return { skipped: 'referenced' };
    throw err;
  }
}

/** Ends a claim once its delete is done (or given up); uploads waiting for it go on. */
export async function releaseClaim(db: Db, hash: string, generation: number): Promise<void> {
  await db
    .update(blobClaims)
    .set({ claimedUntil: null })
    .where(sql`${blobClaims.hash} = ${hash} and ${blobClaims.generation} = ${generation}`);
}
