import { and, eq, gte, lt, or, sql } from 'drizzle-orm';
import type { Tx } from '../store/index.js';
import type { PathParts } from './paths.js';
import { siteFiles } from './tables.js';

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/**
 * The folder and everything in it. Paths compare byte by byte (collation "C", see tables.ts), so
 * what lies below `a/b` is the key range [`a/b/`, `a/b0`) ('0' follows '/'): a range scan of the
 * primary key, whatever the size of the rest of the site.
 */
export function inFolder(siteId: number, folderPath: string) {
  return and(
    eq(siteFiles.siteId, siteId),
    or(
      eq(siteFiles.path, folderPath),
      and(gte(siteFiles.path, `${folderPath}/`), lt(siteFiles.path, `${folderPath}0`)),
    ),
  );
}

/**
 * Moves a folder's row and every row below it to `newPath` in one statement: the folder itself
 * takes the new name, parent and depth; everything below keeps its name and type (a name's
 * extension does not change) and has the prefix of its path and parent replaced and its depth
 * shifted. The rows are one range of the primary key (collation "C"), so the cost is the folder's,
 * not the site's. The caller has checked that nothing exists at or below `newPath`. Returns how
 * many files moved.
 */
export async function moveFolderRows(
  tx: Tx,
  siteId: number,
  oldPath: string,
  newPath: string,
  target: PathParts,
): Promise<number> {
  const depthShift = target.depth - (oldPath.split('/').length - 1);
  const [row] = rowsOf<{ files: number }>(
    await tx.execute(sql`
      with moved as (
        update site_files set
          path = ${newPath}::text || substr(path, char_length(${oldPath}::text) + 1),
          name = case when path = ${oldPath}::text then ${target.name}::text else name end,
          parent = case when path = ${oldPath}::text then ${target.parent}::text
            else ${newPath}::text || substr(parent, char_length(${oldPath}::text) + 1) end,
          depth = depth + ${depthShift}::int
        where site_id = ${siteId}::int
          and (path = ${oldPath}::text or (path >= ${`${oldPath}/`}::text and path < ${`${oldPath}0`}::text))
        returning kind
      )
      select (count(*) filter (where kind = 'file'))::int as files from moved`),
  );
  return row?.files ?? 0;
}
