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
 * and several replicas may sweep at once: a blob another sweeper has claimed is skipped. A delete
 * that misses its deadline is counted and its blob left for a later sweep; the sweep goes on.
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
  let release = true;
  try {
    // Past the deadline an upload may already treat the claim as expired: send nothing then, and
    // abort a delete still in flight at the deadline.
    const remaining = deadlineMs - (performance.now() - claimedAt);
    if (remaining <= 0) {
      blobClaimEventsTotal.inc({ event: 'sweeper_deadline_passed' });
      return false;
    }
    const deadline = AbortSignal.timeout(Math.ceil(remaining));
    try {
      await blobs.delete(`blobs/${hash}`, deadline);
    } catch (err) {
      if (!deadline.aborted) throw err;
      // Missed its deadline: the blob stays for a later sweep, and this sweep goes on. The claim
      // is left to expire, not released: an aborted request may still reach the store, and only
      // the rest of the lease (at least half of it, past the deadline) is sure to outlast it.
      release = false;
      blobClaimEventsTotal.inc({ event: 'sweeper_deadline_passed' });
      return false;
    }
    blobClaimEventsTotal.inc({ event: 'sweeper_deleted' });
    return true;
  } finally {
    if (release) await releaseClaim(db, hash, claim.generation);
  }
}
