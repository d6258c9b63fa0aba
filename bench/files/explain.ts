// The plans of the files index's queries with 100,000 files in one site (EXPLAIN ANALYZE), on
// PostgreSQL (after VACUUM ANALYZE, what autovacuum does) and on PGlite (as a standalone server
// has it: no statistics, no visibility map). Writes run inside a transaction that is rolled back.
//
//   npx tsx bench/files/explain.ts [--files 100000] [--backends postgres,pglite]
import { parseArgs } from 'node:util';
import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { pageSql } from '../../src/files/listing.js';
import { migrate } from '../../src/store/migrate.js';
import { openStore, type Store } from '../../src/store/index.js';
import { createDatabase, startPostgres } from '../../test/support/postgres.js';
import { seed, type Query } from './seed.js';

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '100000' },
    backends: { type: 'string', default: 'postgres,pglite' },
  },
});
const FILES = Number(values.files);
const dialect = new PgDialect();

async function explainAll(store: Store, analyze: boolean): Promise<void> {
  await store.session(async (session) => {
    const query: Query = (text, params) => session.query(text, params);
    const [account] = await query(`insert into accounts (email) values ('explain@example.com') returning id`);
    const [site] = await query(
      `insert into sites (account_id, slug, name) values ($1, 'explain', 'explain') returning id`,
      [account!.id],
    );
    const siteId = Number(site!.id);
    await query(
      `insert into site_files (site_id, path, kind, name, parent, depth, size, blob_key, content_type)
       values ($1, 'seed.html', 'file', 'seed.html', null, 0, 40, repeat('a', 64), 'text/html; charset=utf-8')`,
      [siteId],
    );
    await seed(query, siteId, FILES);
    if (analyze) await query('vacuum (analyze, verbose) site_files');
    const total = FILES + Math.ceil((FILES - 1001) / 1000) + 1;
    const last = total - (Math.ceil(total / 100) - 1) * 100;
    const plans: Array<[string, SQL]> = [
      ['list page 1', pageSql(siteId, 0, 100, false)],
      ['list middle page (forward)', pageSql(siteId, Math.floor(total / 200) * 100, 100, false)],
      ['list last page (backward)', pageSql(siteId, 0, last, true)],
      [
        'edge/get: one path',
        sql`select * from site_files where site_id = ${siteId} and path = 'move/f000500.html'`,
      ],
      [
        'folder clash / database check (range of the key)',
        sql`select path from site_files where site_id = ${siteId} and (path = 'move' or (path >= 'move/' and path < 'move0')) and kind = 'database' limit 1`,
      ],
      [
        'rename-folder (1,000 files), rolled back',
        sql`update site_files set path = 'moved' || substr(path, char_length('move') + 1), depth = depth
            where site_id = ${siteId} and (path = 'move' or (path >= 'move/' and path < 'move0'))`,
      ],
      [
        'delete-folder (1,000 files), rolled back',
        sql`delete from site_files where site_id = ${siteId} and (path = 'move' or (path >= 'move/' and path < 'move0'))`,
      ],
    ];
    for (const [name, statement] of plans) {
      const { sql: text, params } = dialect.sqlToQuery(statement);
      await query('begin');
      // As listFiles runs the list (see listing.ts); changes nothing for the other statements.
      if (name.startsWith('list')) await query(`select set_config('enable_sort', 'off', true)`);
      const rows = await query(`explain (analyze, costs off, timing off, summary on) ${text}`, params);
      await query('rollback');
      console.log(`\n-- ${name}\n${rows.map((r) => String(r['QUERY PLAN'])).join('\n')}`);
    }
  });
}

for (const backend of values.backends.split(',')) {
  console.log(`\n==== ${backend}, ${FILES} files in one site ====`);
  if (backend === 'postgres') {
    const server = await startPostgres();
    const store = await openStore({ databaseUrl: await createDatabase(server.url) });
    try {
      await migrate(store);
      await explainAll(store, true);
    } finally {
      await store.close();
      await server.stop();
    }
  } else {
    const store = await openStore({ pgliteDir: 'memory://' });
    try {
      await migrate(store);
      await explainAll(store, false);
    } finally {
      await store.close();
    }
  }
}
