import { and, asc, count, desc, eq, ne, or, sql } from 'drizzle-orm';
import { dbOp } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { siteFiles } from './tables.js';

export interface ListedEntry {
  path: string;
  name: string;
  type: 'file' | 'folder';
  size: number;
  parent: string | null;
  depth: number;
  /** A SQLite database: listed as a file, with no URL (never served). */
  database: boolean;
}

/** One page of the site's entries: folders first at each depth, then by name (byte order). */
export async function listFiles(
  db: Db,
  siteId: number,
  page: number,
  perPage: number,
): Promise<{ total: number; entries: ListedEntry[] }> {
  // Files named .gitkeep are hidden (spec 2.1); a folder of that name is listed like any other.
  const visible = and(
    eq(siteFiles.siteId, siteId),
    or(ne(siteFiles.kind, 'file'), ne(siteFiles.name, '.gitkeep')),
  );
  return dbOp('list_files', async () => {
    const [totals] = await db.select({ total: count() }).from(siteFiles).where(visible);
    const rows = await db
      .select()
      .from(siteFiles)
      .where(visible)
      .orderBy(
        asc(siteFiles.depth),
        desc(sql`${siteFiles.kind} = 'folder'`),
        // Byte order (COLLATE "C"), so the order does not depend on the server's locale.
        asc(sql`lower(${siteFiles.name}) collate "C"`),
        asc(sql`${siteFiles.name} collate "C"`),
        // Names repeat across folders: the path breaks ties, so pages neither repeat nor skip rows.
        asc(sql`${siteFiles.path} collate "C"`),
      )
      .limit(perPage)
      .offset((page - 1) * perPage);
    return {
      total: totals?.total ?? 0,
      entries: rows.map((r) => ({
        path: r.path,
        name: r.name,
        type: r.kind === 'folder' ? ('folder' as const) : ('file' as const),
        size: r.kind === 'file' ? r.size : 0,
        parent: r.parent,
        depth: r.depth,
        database: r.kind === 'database',
      })),
    };
  });
}
