// Seeds one site's file index with SQL: rows like the ones uploads make (see README.md).

/** The folder the rename moves back and forth: it holds this many files at every size. */
export const MOVED_FILES = 1000;

export type Query = (text: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** Rows like the ones uploads make: `move/` with 1,000 files, the rest in folders of 1,000. */
export async function seed(query: Query, siteId: number, files: number): Promise<void> {
  const [model] = await query(
    `select size, blob_key, content_type from site_files where site_id = $1 and path = 'seed.html'`,
    [siteId],
  );
  if (!model) throw new Error('the seed upload is missing');
  const rest = files - 1 - MOVED_FILES; // seed.html is one of them
  const insertFiles = (folder: string, count: number, from: number) =>
    query(
      `insert into site_files (site_id, path, kind, name, parent, depth, size, blob_key, content_type)
       select $1, ${folder} || '/' || n, 'file', n, ${folder}, 1, $2, $3, $4
       from (select i, 'f' || lpad(i::text, 6, '0') || '.html' as n from generate_series($5::int, $6::int) i) s`,
      [siteId, model.size, model.blob_key, model.content_type, from, from + count - 1],
    );
  await query(
    `insert into site_files (site_id, path, kind, name, parent, depth) values ($1, 'move', 'folder', 'move', null, 0)`,
    [siteId],
  );
  await insertFiles(`'move'`, MOVED_FILES, 0);
  if (rest > 0) {
    await query(
      `insert into site_files (site_id, path, kind, name, parent, depth)
       select $1, 'd' || lpad(i::text, 4, '0'), 'folder', 'd' || lpad(i::text, 4, '0'), null, 0
       from generate_series(0, ($2::int - 1) / 1000) i`,
      [siteId, rest],
    );
    await insertFiles(`'d' || lpad((i / 1000)::text, 4, '0')`, rest, 0);
  }
  // The counters every upload keeps; the folder counters only where the build has them.
  const [columns] = await query(
    `select count(*)::int as n from information_schema.columns where table_name = 'sites' and column_name = 'folder_count'`,
  );
  const folderCounters = Number(columns?.n) > 0 ? `, folder_count = c.folders` : '';
  await query(
    `update sites set file_count = c.files, storage_bytes = c.bytes${folderCounters}
     from (select count(*) filter (where kind <> 'folder')::int as files,
                  coalesce(sum(size), 0)::bigint as bytes,
                  count(*) filter (where kind = 'folder')::int as folders
           from site_files where site_id = $1) c
     where id = $1`,
    [siteId],
  );
}
