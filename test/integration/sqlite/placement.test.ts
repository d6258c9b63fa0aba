import { inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sqliteDatabases } from '../../../src/sqlite/tables.js';
import {
  metricValue,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { createDatabase } from '../../support/postgres.js';
import { sqliteApi } from '../../support/sqlite-api.js';

/**
 * The per-shard cap on placement (HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD): two shards on one
 * PostgreSQL with a cap of one database each take two databases, and the third is refused with
 * a 503 that says no shard has room, even when first uses race.
 */
describe('SQLite placement: at most HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD databases per shard', () => {
  let databaseUrl: string;
  let a: TestHostplane;
  let b: TestHostplane;
  let site: TestSite;
  const shard = (name: string) =>
    startHostplane('postgres+s3', {
      env: {
        DATABASE_URL: databaseUrl,
        HOSTPLANE_SQLITE_SHARD_NAME: name,
        HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD: '1',
      },
    });
  const refusedFull = async () =>
    metricValue(await scrapeMetrics(a), 'hostplane_sqlite_placement_refused_total', { reason: 'full' });

  beforeAll(async () => {
    databaseUrl = await createDatabase(inject('postgresUrl'));
    a = await shard('cap-a');
    b = await shard('cap-b');
    site = await a.createSite('placement', { plan: 'business' });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('places concurrent first uses on shards with room only, and refuses the rest with 503 + Retry-After', async () => {
    const api = sqliteApi(a, site);
    const paths = ['one.sqlite', 'two.sqlite', 'three.sqlite', 'four.sqlite'];
    const tokens = [];
    for (const path of paths) tokens.push(await api.token({ path, name: path, requireUserAuth: false }));
    const before = await refusedFull();

    // Four first uses at once, through both replicas: exactly one database lands on each shard.
    const answers = await Promise.all(
      tokens.map((token, i) =>
        sqliteApi(i % 2 === 0 ? a : b, site).scoped(token, 'POST', '/api/v1/sqlite/exec', {
          sql: 'CREATE TABLE t (x)',
        }),
      ),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 503, 503]);
    for (const refused of answers.filter((r) => r.status === 503)) {
      expect(refused.body).toEqual({
        error: 'Service Unavailable',
        message: 'No SQLite shard has room for a new database right now; try again later.',
        retry_after: 30,
      });
      expect(refused.headers.get('retry-after')).toBe('30');
    }
    const rows = await a.services.store.db
      .select({ path: sqliteDatabases.path, shard: sqliteDatabases.shard })
      .from(sqliteDatabases)
      .where(inArray(sqliteDatabases.path, paths));
    const placed = rows.filter((row) => row.shard !== null).map((row) => row.shard);
    expect(placed.sort()).toEqual(['cap-a', 'cap-b']);
    expect((await refusedFull()) - before).toBe(2);

    // A placed database keeps being served; a refused one is still refused (not placed anywhere).
    const served = answers.findIndex((r) => r.status === 200);
    const again = await sqliteApi(b, site).scoped(tokens[served]!, 'POST', '/api/v1/sqlite/exec', {
      sql: 'INSERT INTO t VALUES (1)',
    });
    expect(again.status).toBe(200);
    const refusedIndex = answers.findIndex((r) => r.status === 503);
    const still = await api.scoped(tokens[refusedIndex]!, 'GET', '/api/v1/sqlite/version');
    expect(still.status).toBe(503);
    expect(still.body.message).toBe(
      'No SQLite shard has room for a new database right now; try again later.',
    );
  });
});
