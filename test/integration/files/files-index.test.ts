import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { pageStatements } from '../../../src/files/listing.js';
import { migrate, migrationsFolder, type StoreSession } from '../../../src/store/index.js';
import { storesClosedAfterEach } from '../../support/stores.js';

// What a files list costs the database does not grow with the site: checked on the plans
// themselves (EXPLAIN ANALYZE counts rows, not time), on PostgreSQL and on PGlite. And the
// migration that brought the index fills the new counters for the files already there.

const openBackend = storesClosedAfterEach();

/** A site of `folders` folders holding 100 files each (rows as uploads make them); its id. */
async function seedSite(s: StoreSession, folders: number): Promise<number> {
  const [account] = await s.query<{ id: number }>(
    `insert into accounts (email) values ('index@example.com') returning id`,
  );
  const [site] = await s.query<{ id: number }>(
    `insert into sites (account_id, slug, name) values ($1, 'index', 'index') returning id`,
    [account!.id],
  );
  const siteId = site!.id;
  await s.query(
    `insert into site_files (site_id, path, kind, name, parent, depth)
     select $1, 'd' || lpad(i::text, 3, '0'), 'folder', 'd' || lpad(i::text, 3, '0'), null, 0
     from generate_series(1, $2::int) i`,
    [siteId, folders],
  );
  await s.query(
    `insert into site_files (site_id, path, kind, name, parent, depth, size, blob_key, content_type)
     select $1, d || '/f' || lpad(j::text, 3, '0') || '.html', 'file', 'f' || lpad(j::text, 3, '0') || '.html',
       d, 1, 10, repeat('a', 64), 'text/html; charset=utf-8'
     from (select 'd' || lpad(i::text, 3, '0') as d from generate_series(1, $2::int) i) f,
       generate_series(1, 100) j`,
    [siteId, folders],
  );
  await s.query(
    `update sites set file_count = $2::int * 100, storage_bytes = $2::int * 1000, folder_count = $2::int where id = $1`,
    [siteId, folders],
  );
  return siteId;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

describe.each(['postgres', 'pglite'] as const)('the files index (%s)', (backend) => {
  it('reads a page off the order index, sorting nothing: rows read follow the page, not the site', async () => {
    const store = await openBackend(backend);
    await migrate(store);
    await store.session(async (s) => {
      const folders = 30; // 3,030 listed entries
      const siteId = await seedSite(s, folders);
      const site = { id: siteId, fileCount: folders * 100, folderCount: folders, hiddenFileCount: 0 };
      const total = folders * 101;
      const dialect = new PgDialect();
      const perPage = 20;
      const lastPage = Math.ceil(total / perPage);
      for (const [page, mostRowsRead, direction] of [
        [1, 3 * perPage, 'Forward'],
        [Math.ceil(lastPage / 2), total / 2 + 3 * perPage, 'Forward'],
        [lastPage, 3 * perPage, 'Backward'],
      ] as const) {
        const statements = pageStatements(site, page, perPage)!;
        const settings = dialect.sqlToQuery(statements.settings);
        const query = dialect.sqlToQuery(statements.page);
        await s.query('begin');
        await s.query(settings.sql, settings.params);
        const [row] = await s.query<{ 'QUERY PLAN': unknown }>(
          `explain (analyze, format json) ${query.sql}`,
          query.params,
        );
        await s.query('rollback');
        const raw = row!['QUERY PLAN'];
        const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>;
        const all = nodes(plan[0]!.Plan);
        expect(all.filter((n) => n['Node Type'].includes('Sort'))).toEqual([]);
        const ordered = all.find((n) => n['Index Name'] === 'site_files_order_idx');
        expect(ordered, `page ${page}`).toMatchObject({ 'Scan Direction': direction });
        const read = all
          .filter((n) => n['Relation Name'] === 'site_files' && n['Node Type'].includes('Scan'))
          .reduce((sum, n) => sum + n['Actual Rows'] * n['Actual Loops'], 0);
        expect(read, `rows of site_files read for page ${page}`).toBeLessThanOrEqual(mostRowsRead);
      }
    });
  });

  it('migration 0007 fills the folder and hidden-file counters of the files already there', async () => {
    const store = await openBackend(backend);
    // The migrations before 0007, from a copy of the folder whose journal stops there.
    const before = mkdtempSync(path.join(tmpdir(), 'hostplane-migrations-'));
    try {
      cpSync(migrationsFolder, before, { recursive: true });
      const journalFile = path.join(before, 'meta', '_journal.json');
      const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: Array<{ tag: string }> };
      journal.entries = journal.entries.filter((e) => e.tag < '0007');
      writeFileSync(journalFile, JSON.stringify(journal));
      await store.session((s) => s.applyMigrations(before));
    } finally {
      rmSync(before, { recursive: true, force: true });
    }
    await store.session(async (s) => {
      const [account] = await s.query<{ id: number }>(
        `insert into accounts (email) values ('m@example.com') returning id`,
      );
      const [site] = await s.query<{ id: number }>(
        `insert into sites (account_id, slug, name, file_count) values ($1, 'm', 'm', 3) returning id`,
        [account!.id],
      );
      await s.query(
        `insert into site_files (site_id, path, kind, name, parent, depth) values
           ($1, 'a', 'folder', 'a', null, 0), ($1, 'a/b', 'folder', 'b', 'a', 1),
           ($1, 'a/.gitkeep', 'file', '.gitkeep', 'a', 1), ($1, 'a/b/x.html', 'file', 'x.html', 'a/b', 2),
           ($1, '.gitkeep', 'folder', '.gitkeep', null, 0), ($1, '.gitkeep/y.html', 'file', 'y.html', '.gitkeep', 1)`,
        [site!.id],
      );
    });
    await migrate(store);
    await store.session(async (s) => {
      const rows = await s.query(`select file_count, folder_count, hidden_file_count from sites`);
      expect(rows).toEqual([{ file_count: 3, folder_count: 3, hidden_file_count: 1 }]);
    });
  });
});
