/** What the edge reads of deploys for their preview hosts (`<deploy id>--<slug>`). */
import { sql } from 'drizzle-orm';
import type { Executor } from '../store/index.js';
import { DEPLOY_ID, date, type PreviewRow } from './deploy-rows.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/** A deploy served at its preview host: a finalized one (a ready one was never checked as a whole). */
export async function previewable(db: Executor, siteId: number, id: string): Promise<boolean> {
  if (!DEPLOY_ID.test(id)) return false;
  const [row] = rowsOf<{ ok: boolean }>(
    await db.execute(sql`select true as ok from deploys where id = ${id} and site_id = ${siteId}::int
      and state in ('draft', 'published')`),
  );
  return row?.ok === true;
}

/** The rows of some paths of a deploy (files whose blob has arrived). */
export async function previewRows(db: Executor, id: string, paths: string[]): Promise<PreviewRow[]> {
  if (paths.length === 0) return [];
  return rowsOf<{
    path: string;
    hash: string;
    size: string;
    content_type: string;
    created_at: Date | string;
  }>(
    await db.execute(sql`select f.path, f.hash, f.size::text, f.content_type, d.created_at
      from deploy_files f join deploys d on d.id = f.deploy_id
      where f.deploy_id = ${id} and f.size is not null and f.path in (${sql.join(
        paths.map((p) => sql`${p}`),
        sql`, `,
      )})`),
  ).map((r) => ({
    path: r.path,
    kind: 'file' as const,
    blobKey: r.hash,
    size: Number(r.size),
    contentType: r.content_type,
    updatedAt: date(r.created_at),
  }));
}
