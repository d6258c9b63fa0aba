import { sql } from 'drizzle-orm';
import type { Executor } from '../store/index.js';

/**
 * Counts a deploy's manifest against the site's live file set (site_files: what is served now,
 * files API changes included) and records it on the deploy: paths added, paths whose bytes
 * changed, live paths it drops. Run at create and again at each switch to it (under the site
 * lock there, before the live set is replaced).
 */
export async function recordChanges(db: Executor, siteId: number, deployId: string): Promise<void> {
  // One full join of the manifest and the live set, by path (both compare under collate "C").
  await db.execute(sql`
    with counts as (
      select count(*) filter (where l.path is null)::int as added,
        count(*) filter (where d.path is not null and l.blob_key <> d.hash)::int as changed,
        count(*) filter (where d.path is null)::int as removed
      from (select path, hash from deploy_files where deploy_id = ${deployId}) d
      full join (select path, blob_key from site_files where site_id = ${siteId}::int and kind = 'file') l
        on l.path = d.path
    )
    update deploys set files_added = counts.added, files_changed = counts.changed,
      files_removed = counts.removed
    from counts where deploys.id = ${deployId}`);
}
