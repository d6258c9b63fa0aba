import { eq, sql } from 'drizzle-orm';
import type { BlobStore } from '../blob/index.js';
import type { Db } from '../store/index.js';
import { siteFiles } from './tables.js';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/** A transaction-scoped advisory lock on one blob: commits that reference it and the sweeper take it. */
export async function lockBlob(tx: Tx, hash: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${hash}, 0))`);
}

/**
 * Deletes blobs that no file references any more. Only blobs older than `graceMs` go, so an
 * upload whose bytes are written but whose index row is not yet committed keeps its blob.
 */
export async function sweepOrphanBlobs(db: Db, blobs: BlobStore, graceMs: number): Promise<number> {
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
    const hash = blob.key.slice('blobs/'.length);
    // The blob's lock orders this check-and-delete with any commit that references the blob.
    const removed = await db.transaction(async (tx) => {
      await lockBlob(tx, hash);
      const [ref] = await tx
        .select({ n: sql`1` })
        .from(siteFiles)
        .where(eq(siteFiles.blobKey, hash))
        .limit(1);
      if (ref) return false;
      await blobs.delete(blob.key);
      return true;
    });
    if (removed) deleted += 1;
  }
  return deleted;
}
