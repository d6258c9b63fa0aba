import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { recountCounters, recountSite } from '../../../src/files/counters.js';
import { listFiles, type ListedEntry } from '../../../src/files/listing.js';
import { counterCorrectionsTotal } from '../../../src/files/metrics.js';
import { Platform } from '../../../src/platform/index.js';
import { migrate, type Store } from '../../../src/store/index.js';
import { eventually } from '../../support/eventually.js';
import { storesClosedAfterEach, type Backend } from '../../support/stores.js';

// The per-site counters (file, folder, .gitkeep) that a list's total and page direction trust
// heal: a replica of the previous release (a rolling upgrade) changes files without keeping the
// newer counters, and the periodic recount (src/files/counters.ts) puts them right.

const openStore = storesClosedAfterEach();

async function openBackend(backend: Backend): Promise<Store> {
  const store = await openStore(backend);
  await migrate(store);
  return store;
}

/**
 * Sites of 12 folders, each holding 8 files and a .gitkeep, with counters that match; their ids.
 * Listed: 12 folders + 96 files = 108 entries.
 */
async function seedSites(store: Store, slugs: string[]): Promise<number[]> {
  const ids: number[] = [];
  await store.session(async (s) => {
    const [account] = await s.query<{ id: number }>(
      `insert into accounts (email) values ('recount@example.com') returning id`,
    );
    for (const slug of slugs) {
      const [site] = await s.query<{ id: number }>(
        `insert into sites (account_id, slug, name, file_count, folder_count, hidden_file_count)
         values ($1, $2, $2, 108, 12, 12) returning id`,
        [account!.id, slug],
      );
      await s.query(
        `insert into site_files (site_id, path, kind, name, parent, depth)
         select $1, 'd' || lpad(i::text, 2, '0'), 'folder', 'd' || lpad(i::text, 2, '0'), null, 0
         from generate_series(1, 12) i`,
        [site!.id],
      );
      await s.query(
        `insert into site_files (site_id, path, kind, name, parent, depth, size, blob_key, content_type)
         select $1, d || '/' || n, 'file', n, d, 1, 10, repeat('a', 64), 'text/html; charset=utf-8'
         from (select 'd' || lpad(i::text, 2, '0') as d from generate_series(1, 12) i) f,
           (select 'f' || j || '.html' as n from generate_series(1, 8) j
            union all select '.gitkeep') g`,
        [site!.id],
      );
      ids.push(site!.id);
    }
  });
  return ids;
}

const PER_PAGE = 10;
const PAGES = [1, 6, 11]; // first, middle (read forwards or backwards), last of 108 entries

async function pages(
  store: Store,
  siteId: number,
): Promise<Array<{ total: number; entries: ListedEntry[] }>> {
  return Promise.all(PAGES.map((page) => listFiles(store.db, siteId, page, PER_PAGE)));
}

async function counters(store: Store, siteId: number) {
  const result = await store.db.execute(
    sql`select file_count, folder_count, hidden_file_count from sites where id = ${siteId}`,
  );
  return (result as unknown as { rows: unknown[] }).rows[0];
}

const corrections = async (counter: string) =>
  (await counterCorrectionsTotal.get()).values.find((v) => v.labels.counter === counter)?.value ?? 0;

describe.each(['postgres', 'pglite'] as const)('the counter recount (%s)', (backend) => {
  it('corrects counters an older replica left wrong, after which the pages are exact again', async () => {
    const store = await openBackend(backend);
    const platform = new Platform(store.db);
    const [siteId] = await seedSites(store, ['drift']);
    const right = await pages(store, siteId!);
    expect(right.map((p) => p.total)).toEqual([108, 108, 108]);
    expect(right.map((p) => p.entries.length)).toEqual([10, 10, 8]);
    expect(right[0]!.entries.slice(0, 2).map((e) => e.path)).toEqual(['d01', 'd02']);
    expect(right[2]!.entries.at(-1)!.path).toBe('d12/f8.html');

    // What an old replica leaves: folders made and .gitkeep files deleted, new counters untouched.
    await store.db.execute(
      sql`update sites set folder_count = 9, hidden_file_count = 15 where id = ${siteId}`,
    );
    const drifted = await pages(store, siteId!);
    expect(drifted.map((p) => p.total)).not.toEqual([108, 108, 108]);
    expect(drifted.map((p) => p.entries)).not.toEqual(right.map((p) => p.entries));

    const before = await corrections('folder_count');
    expect(await recountCounters(store.db, platform, 50)).toEqual([siteId]);
    expect(await counters(store, siteId!)).toEqual({
      file_count: 108,
      folder_count: 12,
      hidden_file_count: 12,
    });
    expect(await corrections('folder_count')).toBe(before + 1);
    expect(await pages(store, siteId!)).toEqual(right);
    // Nothing left to correct.
    expect(await recountCounters(store.db, platform, 50)).toEqual([]);
  });

  it('visits the sites checked longest ago first, a batch at a time, so every site comes round', async () => {
    const store = await openBackend(backend);
    const platform = new Platform(store.db);
    const ids = await seedSites(store, ['a', 'b', 'c']);
    await store.db.execute(sql`update sites set folder_count = 0`);
    expect(await recountCounters(store.db, platform, 2)).toEqual(ids.slice(0, 2));
    expect(await recountCounters(store.db, platform, 2)).toEqual(ids.slice(2));
    for (const id of ids) expect(await counters(store, id)).toMatchObject({ folder_count: 12 });
  });
});

describe('the counter recount racing an upload (postgres)', () => {
  it('waits for the site lock, so a change committed meanwhile is neither lost nor counted twice', async () => {
    const store = await openBackend('postgres');
    const platform = new Platform(store.db);
    const [siteId] = await seedSites(store, ['race']);
    // Drifted, so that the pass has something to correct while the upload is in flight.
    await store.db.execute(sql`update sites set folder_count = 9 where id = ${siteId}`);
    await store.session(async (upload) => {
      // An upload of the current release: under the site lock, a new folder and its counter.
      await upload.query('begin');
      await upload.query('select id from sites where id = $1 for update', [siteId]);
      // Also the index's table: a pass that read the counters without waiting for the site lock
      // would stop here before its count, and count the upload's rows against counters read
      // before them.
      await upload.query('lock table site_files in access exclusive mode');
      await upload.query(
        `insert into site_files (site_id, path, kind, name, parent, depth) values ($1, 'new', 'folder', 'new', null, 0)`,
        [siteId],
      );
      await upload.query('update sites set folder_count = folder_count + 1 where id = $1', [siteId]);
      const pass = recountSite(store.db, platform, siteId!);
      await eventually('the recount waiting for the site lock', async () => {
        const result = await store.db.execute(
          sql`select count(*)::int as n from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return (result as unknown as { rows: Array<{ n: number }> }).rows[0]!.n === 1;
      });
      await upload.query('commit');
      expect(await pass).toBe(true);
    });
    expect(await counters(store, siteId!)).toEqual({
      file_count: 108,
      folder_count: 13,
      hidden_file_count: 12,
    });
  });
});

describe('a files list during a change (postgres)', () => {
  it('reads its total and its page in one snapshot: a change committed in between shows in neither', async () => {
    const store = await openBackend('postgres');
    const [siteId] = await seedSites(store, ['snapshot']);
    const before = await listFiles(store.db, siteId!, 1, PER_PAGE);
    await store.session(async (change) => {
      // Holds the page's table, so the list stops after reading the counters, before its page.
      await change.query('begin');
      await change.query('lock table site_files in access exclusive mode');
      const listed = listFiles(store.db, siteId!, 1, PER_PAGE);
      await eventually('the list waiting for its page', async () => {
        const result = await store.db.execute(
          sql`select count(*)::int as n from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return (result as unknown as { rows: Array<{ n: number }> }).rows[0]!.n === 1;
      });
      // Five folders that sort first, with their counter, committed while the list waits.
      await change.query(
        `insert into site_files (site_id, path, kind, name, parent, depth)
         select $1, 'a' || i, 'folder', 'a' || i, null, 0 from generate_series(1, 5) i`,
        [siteId],
      );
      await change.query('update sites set folder_count = folder_count + 5 where id = $1', [siteId]);
      await change.query('commit');
      const page = await listed;
      expect(page.total).toBe(108);
      expect(page.entries).toEqual(before.entries);
    });
    expect((await listFiles(store.db, siteId!, 1, PER_PAGE)).entries[0]!.path).toBe('a1');
  });
});
