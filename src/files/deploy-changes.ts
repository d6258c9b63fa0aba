import { sql } from 'drizzle-orm';
import type { Executor } from '../store/index.js';

/**
 * Counts a deploy's manifest against the site's live file set (site_files: what is served now,
 * files API changes included) and records it on the deploy: paths added, paths whose bytes
 * changed, live paths it drops. Run at create and again at each switch to it (under the site
 * lock there, before the live set is replaced).
 */
export async function recordChanges(db: Executor, siteId: number, deployId: string): Promise<void> {
  await db.execute(sql`
    with d as (select path, hash from deploy_files where deploy_id = ${deployId}),
    l as (select path, blob_key from site_files where site_id = ${siteId}::int and kind = 'file'),
    counts as (
      select
        (select count(*) from d where not exists (select 1 from l where l.path = d.path))::int as added,
        (select count(*) from d join l on l.path = d.path where l.blob_key <> d.hash)::int as changed,
        (select count(*) from l where not exists (select 1 from d where d.path = l.path))::int as removed
    )
    update deploys set files_added = counts.added, files_changed = counts.changed,
      files_removed = counts.removed
    from counts where deploys.id = ${deployId}`);
}
