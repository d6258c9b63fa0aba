import { sql, type SQL } from 'drizzle-orm';
import { dbOp } from '../observability/index.js';
import type { Site } from '../platform/index.js';
import type { Db } from '../store/index.js';

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

/** Files of this name are never listed (spec 2.1); the site counts them apart (hiddenFileCount). */
export const HIDDEN_FILE_NAME = '.gitkeep';

/** The site's counters a list needs (read with the site, so the total costs no query). */
export type ListedCounts = Pick<Site, 'id' | 'fileCount' | 'folderCount' | 'hiddenFileCount'>;

/**
 * Listed entries: files (SQLite databases among them) and folders, less the files named .gitkeep
 * (spec 2.1; a folder of that name is listed like any other). From the counters kept with every
 * change, so no call counts the site's rows.
 */
export const listedTotal = (site: ListedCounts): number =>
  site.fileCount + site.folderCount - site.hiddenFileCount;

interface Row {
  path: string;
  name: string;
  kind: 'file' | 'folder' | 'database';
  size: string | number;
  depth: number;
}

const parentOf = (path: string): string | null => {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? null : path.slice(0, slash);
};

const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

/**
 * One page read off `site_files_order_idx` (tables.ts) in the list's order or its reverse,
 * skipping `skip` entries. The index holds every column this reads, so a skipped entry costs an
 * index entry, not a row, and nothing is sorted. The WHERE repeats the index's own predicate word
 * for word (that is how PostgreSQL knows the index covers the query): keep them equal. The order
 * is depth, folders before files, the name ignoring case then exactly (byte order, COLLATE "C",
 * whatever the server's locale), and the path to break ties between folders.
 */
export function pageSql(siteId: number, skip: number, limit: number, backward: boolean): SQL {
  const dir = sql.raw(backward ? 'desc' : 'asc');
  return sql`select path, name, kind, size, depth from site_files
    where site_id = ${siteId}::int and (kind <> 'file' or name <> '.gitkeep')
    order by depth ${dir}, (kind <> 'folder') ${dir}, (lower(name) collate "C") ${dir},
      name collate "C" ${dir}, path collate "C" ${dir}
    limit ${limit}::int offset ${skip}::int`;
}

/** The statements of one page: the planner settings for its transaction, then the page. */
export interface PageStatements {
  settings: SQL;
  page: SQL;
  backward: boolean;
}

/**
 * The statements that read a page, or undefined when the page is past the end. A page in the
 * second half of the list is read from the end backwards, so the last page costs what the first
 * does and the middle one (the worst) skips half the site's index entries.
 */
export function pageStatements(
  site: ListedCounts,
  page: number,
  perPage: number,
): PageStatements | undefined {
  const total = listedTotal(site);
  const offset = (page - 1) * perPage;
  if (offset >= total) return undefined;
  const limit = Math.min(perPage, total - offset);
  const after = total - offset - limit;
  const backward = after < offset;
  return {
    // The index is the only plan that does not read the whole site, whatever the statistics say:
    // PGlite never gathers any (no autovacuum), and without them the planner sorts the site for
    // any page past the first few. With sorting off in this transaction only, it cannot. (The page
    // statement needs no sort at all: a disabled one would cost enough to wake the JIT.)
    settings: sql`select set_config('enable_sort', 'off', true)`,
    page: pageSql(site.id, backward ? after : offset, limit, backward),
    backward,
  };
}

/** The site's counters as a list reads them (in the page's snapshot). */
export type ListCounters = Omit<ListedCounts, 'id'> & { storageBytes: number };

/**
 * One page of the site's entries, in the spec's order; `total` is the counters' (listedTotal). The
 * counters are read in the page's own transaction, one REPEATABLE READ snapshot for both, so the
 * total, the page's bounds and direction, and the rows agree even while the site changes.
 */
export async function listFiles(
  db: Db,
  siteId: number,
  page: number,
  perPage: number,
): Promise<{ total: number; counters: ListCounters; entries: ListedEntry[] }> {
  const { counters, statements, rows } = await dbOp('list_files', () =>
    db.transaction(
      async (tx) => {
        const [read] = rowsOf<ListCounters>(
          await tx.execute(sql`select file_count::int as "fileCount",
              folder_count::int as "folderCount", hidden_file_count::int as "hiddenFileCount",
              storage_bytes::float8 as "storageBytes"
            from sites where id = ${siteId}::int`),
        );
        // The site was read for the request: gone since, it has nothing to list.
        const counters = read ?? { fileCount: 0, folderCount: 0, hiddenFileCount: 0, storageBytes: 0 };
        const statements = pageStatements({ id: siteId, ...counters }, page, perPage);
        if (!statements) return { counters, statements, rows: [] };
        await tx.execute(statements.settings);
        return { counters, statements, rows: rowsOf<Row>(await tx.execute(statements.page)) };
      },
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    ),
  );
  const total = listedTotal({ id: siteId, ...counters });
  if (statements?.backward) rows.reverse();
  return {
    total,
    counters,
    entries: rows.map((r) => ({
      path: r.path,
      name: r.name,
      type: r.kind === 'folder' ? ('folder' as const) : ('file' as const),
      size: r.kind === 'file' ? Number(r.size) : 0,
      // What the stored parent column holds (see pathParts), and not in the index.
      parent: parentOf(r.path),
      depth: r.depth,
      database: r.kind === 'database',
    })),
  };
}
