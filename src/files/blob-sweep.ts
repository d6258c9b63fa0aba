import type { BlobStore } from '../blob/index.js';
import type { Db } from '../store/index.js';
import { CLAIM_DELETE_DEADLINE_MS, claimForDeletion, releaseClaim } from './blob-claims.js';
import { blobClaimEventsTotal } from './metrics.js';

export interface SweepOptions {
  /** How long after its claim a blob's delete may still be sent (at most, and by default, CLAIM_DELETE_DEADLINE_MS). */
  deleteDeadlineMs?: number;
}

/**
 * Deletes blobs that no file references any more, and abandoned staged uploads. Only objects
 * older than `graceMs` go, so bytes an upload has just written are normally left alone; the claim
 * protocol of blob-claims.ts makes the rare meeting safe. No transaction is open during an S3 call,
 * and several replicas may sweep at once: a blob another sweeper has claimed is skipped.
 */
export async function sweepOrphanBlobs(
  db: Db,
  blobs: BlobStore,
  graceMs: number,
  options: SweepOptions = {},
): Promise<number> {
  // Shorter than the claim's deadline is always safe (more margin); longer never is.
  const deadlineMs = Math.min(options.deleteDeadlineMs ?? CLAIM_DELETE_DEADLINE_MS, CLAIM_DELETE_DEADLINE_MS);
  const cutoff = Date.now() - graceMs;
  let deleted = 0;
  for await (const blob of blobs.list('tmp/')) {
    // Staged uploads have unique keys: an old one was abandoned.
    if (blob.lastModified.getTime() > cutoff) continue;
    await blobs.delete(blob.key);
    deleted += 1;
  }
  for await (const blob of blobs.list('blobs/')) {
    if (blob.lastModified.getTime() > cutoff) continue;
    if (await deleteIfOrphan(db, blobs, blob.key.slice('blobs/'.length), deadlineMs)) deleted += 1;
  }
  return deleted;
}

async function deleteIfOrphan(db: Db, blobs: BlobStore, hash: string, deadlineMs: number): Promise<boolean> {
  const claimedAt = performance.now();
  const claim = await claimForDeletion(db, hash);
  if ('skipped' in claim) {
    blobClaimEventsTotal.inc({ event: `sweeper_skipped_${claim.skipped}` });
    return false;
  }
  blobClaimEventsTotal.inc({ event: 'sweeper_claimed' });
  try {
    // Past the deadline an upload may already treat the claim as expired: send nothing then, and
    // abort a delete still in flight at the deadline.
    const remaining = deadlineMs - (performance.now() - claimedAt);
    if (remaining <= 0) {
      blobClaimEventsTotal.inc({ event: 'sweeper_deadline_passed' });
      return false;
    }
    await blobs.delete(`blobs/${hash}`, AbortSignal.timeout(Math.ceil(remaining)));
    blobClaimEventsTotal.inc({ event: 'sweeper_deleted' });
    return true;
  } finally {
    await releaseClaim(db, hash, claim.generation);
  }
}
