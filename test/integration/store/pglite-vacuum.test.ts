import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/index.js';
import { createDatabase } from '../../support/postgres.js';

// PGlite has no autovacuum: the standalone server vacuums it itself (store.maintain, run by the
// `pglite_vacuum` sweep). Replacing a table's rows, as every deploy's switch does to site_files,
// must then reuse the space the old rows held, and the planner gets statistics.
const rowsOf = <R>(result: unknown): R[] => (result as { rows: R[] }).rows;

let store: Store;
beforeAll(async () => {
  store = await openStore({ pgliteDir: 'memory://', pgliteTemplate: false });
  await store.db.execute(sql`create table churn (id int primary key, body text not null)`);
});
afterAll(async () => {
  await store?.close();
});

/** Deletes every row and writes 500 new ones (a switch of a 500-file site); the table's bytes after. */
async function replaceAll(round: number): Promise<number> {
  await store.db.transaction(async (tx) => {
    await tx.execute(sql`delete from churn`);
    await tx.execute(
      sql`insert into churn select i, repeat(${String(round % 10)}, 200) from generate_series(1, 500) i`,
    );
  });
  const [row] = rowsOf<{ bytes: number }>(
    await store.db.execute(sql`select pg_total_relation_size('churn')::int as bytes`),
  );
  return row!.bytes;
}

describe('PGlite upkeep', () => {
  it('reuses the space of replaced rows and gives the planner statistics', async () => {
    const first = await replaceAll(0);
    let last = first;
    for (let round = 1; round <= 12; round++) {
      await store.maintain();
      last = await replaceAll(round);
    }
    // Without the vacuum the table grows by a whole copy each round (13 times its size here).
    expect(last).toBeLessThanOrEqual(3 * first);

    const [stats] = rowsOf<{ reltuples: number }>(
      await store.db.execute(sql`select reltuples::int as reltuples from pg_class where relname = 'churn'`),
    );
    // -1 until a VACUUM or ANALYZE has counted them.
    expect(stats!.reltuples).toBeGreaterThan(0);
  });

  it('does nothing on PostgreSQL, whose autovacuum does it', async () => {
    const pg = await openStore({ databaseUrl: await createDatabase(inject('postgresUrl')) });
    try {
      expect(await pg.maintain()).toBe(0);
    } finally {
      await pg.close();
    }
  });
});
