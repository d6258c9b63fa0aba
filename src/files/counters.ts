import { sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Platform, UsageChange } from '../platform/index.js';
import type { Db } from '../store/index.js';
import { HIDDEN_FILE_NAME } from './listing.js';
import { counterCorrectionsTotal } from './metrics.js';

/** A site's counters as its file index has them: what `sites` should hold. */
interface Counted {
  files: number;
  folders: number;
  hidden: number;
}

/**
 * Recounts the file counters of a batch of sites and corrects those that are wrong; returns how
 * many counters it corrected. The counters are kept with every change (usage.ts recordChange), but
 * a replica of an older release (a rolling upgrade) changes files without keeping the newer ones,
 * and a wrong count shifts the list's pages and the folder limit: this pass heals them. Each site
 * is recounted under the site lock every upload takes, so no change lands between the count and
 * the correction; replicas claim different sites (claimCounterChecks), each the least recently
 * checked, so every site comes round.
 */
export async function recountCounters(db: Db, platform: Platform, batch: number): Promise<number[]> {
  const corrected: number[] = [];
  for (const siteId of await platform.claimCounterChecks(batch)) {
    if (await recountSite(db, platform, siteId)) corrected.push(siteId);
  }
  return corrected;
}

/** Recounts one site under its lock; true when a counter was corrected. */
export async function recountSite(db: Db, platform: Platform, siteId: number): Promise<boolean> {
  try {
    return await dbOp('recount_counters', () =>
      db.transaction(async (tx) => {
        const { site } = await platform.lockUsage(tx, siteId);
        const result = await tx.execute(sql`
          select count(*) filter (where kind <> 'folder')::int as files,
            count(*) filter (where kind = 'folder')::int as folders,
            count(*) filter (where kind = 'file' and name = ${HIDDEN_FILE_NAME})::int as hidden
          from site_files where site_id = ${siteId}::int`);
        const [counted] = (result as unknown as { rows: Counted[] }).rows;
        const change: UsageChange = {
          files: counted!.files - site.fileCount,
          folders: counted!.folders - site.folderCount,
          hiddenFiles: counted!.hidden - site.hiddenFileCount,
        };
        const wrong = Object.entries(change).filter(([, delta]) => delta !== 0);
        if (wrong.length === 0) return false;
        for (const [counter] of wrong) counterCorrectionsTotal.inc({ counter: COUNTER_NAMES[counter]! });
        await platform.recordChange(tx, siteId, change);
        return true;
      }),
    );
  } catch (err) {
    // Deleted since the claim: nothing to count.
    if (err instanceof AppError && err.code === 'UNKNOWN_SITE') return false;
    throw err;
  }
}

const COUNTER_NAMES: Record<string, string> = {
  files: 'file_count',
  folders: 'folder_count',
  hiddenFiles: 'hidden_file_count',
};
