import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sqliteDatabases, sqliteLeases } from '../../../src/sqlite/tables.js';
import { startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { createDatabase } from '../../support/postgres.js';
import { sqliteApi } from '../../support/sqlite-api.js';

/**
 * Two `hostplane serve` processes (here: two servers in this process) with their own data dirs and
 * shard names on one PostgreSQL: a database placed on one is used through the other.
 */
describe('SQLite shards: any replica answers, the owner serves', () => {
  let databaseUrl: string;
  let dirA: string;
  let a: TestHostplane;
  let b: TestHostplane;
  let site: TestSite;
  const shard = (name: string, dir: string) =>
    startHostplane('postgres+s3', {
      env: { DATABASE_URL: databaseUrl, HOSTPLANE_SQLITE_SHARD_NAME: name, HOSTPLANE_DATA_DIR: dir },
    });

  beforeAll(async () => {
    databaseUrl = await createDatabase(inject('postgresUrl'));
    dirA = await mkdtemp(path.join(os.tmpdir(), 'hostplane-shard-a-'));
    a = await shard('shard-a', dirA);
    b = await shard('shard-b', await mkdtemp(path.join(os.tmpdir(), 'hostplane-shard-b-')));
    site = await a.createSite('shards');
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await rm(dirA, { recursive: true, force: true });
  });

  it('installs through one replica and reads and writes through the other (forwarded to the owner)', async () => {
    const viaA = sqliteApi(a, site);
    const viaB = sqliteApi(b, site);
    const token = await viaA.token({ path: 'app.sqlite', name: 'app', requireUserAuth: false });
    const first = await viaA.scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE t (x)' });
    expect(first.status).toBe(200);
    const [db] = await a.services.store.db.select().from(sqliteDatabases);
    expect(db!.shard).toBe('shard-a'); // least loaded, ties by name
    const write = await viaB.scoped(token, 'POST', '/api/v1/sqlite/exec', {
      sql: 'INSERT INTO t VALUES (?)',
      params: [42],
    });
    expect(write.status).toBe(200);
    expect(write.headers.get('access-control-allow-origin')).toBe(viaB.origin);
    const read = await viaB.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT x FROM t' });
    expect(read.body.rows).toEqual([{ x: 42 }]);
    expect(existsSync(path.join(dirA, 'sqlite', `${db!.id}.sqlite`))).toBe(true);
    expect(existsSync(path.join(b.config.dataDir, 'sqlite', `${db!.id}.sqlite`))).toBe(false);
    // Checks stay the owner's: a bad Origin through B is still refused.
    const badOrigin = await viaB.call('POST', '/api/v1/sqlite/query', {
      json: { sql: 'SELECT 1' },
      headers: { 'x-sqlite-token': token, origin: 'https://evil.example' },
    });
    expect(badOrigin.status).toBe(403);
    // A forged shard credential is refused, never served as a forwarded call.
    const forged = await viaB.scoped(
      token,
      'POST',
      '/api/v1/sqlite/query',
      { sql: 'SELECT 1' },
      { 'x-hostplane-shard-secret': 'AAAA' },
    );
    expect(forged.status).toBe(403);
  });

  it('counts register and login attempts in one bucket across both replicas', async () => {
    const owner = await a.createSite('ratelimit', { plan: 'standard' });
    const viaA = sqliteApi(a, owner);
    const viaB = sqliteApi(b, owner);
    const token = await viaA.token({ path: 'rl.sqlite', name: 'rl' });
    const ip = { 'x-forwarded-for': '203.0.113.200' };
    const login = (api: typeof viaA) =>
      api.scoped(
        token,
        'POST',
        '/api/v1/sqlite/auth/login',
        { email: 'x@example.com', password: 'whatever it is' },
        ip,
      );
    const statuses = [];
    for (const api of [viaA, viaB, viaA, viaB, viaA, viaB]) statuses.push((await login(api)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });

  it('refuses to open a database whose lease another shard holds, until the lease expires', async () => {
    const owner = await a.createSite('leases', { plan: 'standard' });
    const viaA = sqliteApi(a, owner);
    const token = await viaA.token({ path: 'held.sqlite', name: 'held', requireUserAuth: false });
    const store = a.services.store.db;
    const [db] = await store.select().from(sqliteDatabases).where(eq(sqliteDatabases.path, 'held.sqlite'));
    await store.update(sqliteDatabases).set({ shard: 'shard-a' }).where(eq(sqliteDatabases.id, db!.id));
    // A shard that died a moment ago still holds the lease.
    await store
      .insert(sqliteLeases)
      .values({ databaseId: db!.id, shard: 'ghost', expiresAt: new Date(Date.now() + 60_000) });
    const held = await viaA.scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE t (x)' });
    expect(held.status).toBe(503);
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(0);
    // Its lease runs out (30 s after its last renewal): this shard takes it.
    await store
      .update(sqliteLeases)
      .set({ expiresAt: new Date(Date.now() - 1) })
      .where(eq(sqliteLeases.databaseId, db!.id));
    expect(
      (await viaA.scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE t (x)' })).status,
    ).toBe(200);
    const [lease] = await store.select().from(sqliteLeases).where(eq(sqliteLeases.databaseId, db!.id));
    expect(lease!.shard).toBe('shard-a');
  });

  it('answers 503 while the owner is down, and serves the database again once it is back', async () => {
    const viaB = sqliteApi(b, site);
    const token = await sqliteApi(a, site).token({
      path: 'app.sqlite',
      name: 'restart',
      requireUserAuth: false,
    });
    await a.stop();
    const down = await viaB.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT x FROM t' });
    expect(down.status).toBe(503);
    a = await shard('shard-a', dirA);
    const back = await viaB.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT x FROM t' });
    expect(back.status).toBe(200);
    expect(back.body.rows).toEqual([{ x: 42 }]);
  });
});
