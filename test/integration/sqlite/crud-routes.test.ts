import { describe, expect, it } from 'vitest';
import { plans } from '../../../src/platform/plans.js';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { backends, metricValue, scrapeMetrics } from '../../support/hostplane.js';
import { sqliteApi, type Json } from '../../support/sqlite-api.js';

describe.each(backends)('SQLite CRUD over HTTP on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `sqc-${backend.replace(/\W/g, '')}`);

  /** A site with a database, its admin signed in: calls go with the token, the origin and the session. */
  async function adminDb(install: Json = { path: 'data/app.sqlite', name: 'app' }) {
    const api = sqliteApi(fixture.hp, (await fixture.freshSite()).site);
    const token = await api.token(install);
    await api.register(token, 'admin@example.com');
    const session = await api.login(token, 'admin@example.com');
    const call = (method: string, path: string, json?: unknown, headers: Record<string, string> = {}) =>
      api.scoped(token, method, `/api/v1/sqlite/${path}`, json, {
        'x-sqlite-user-token': session,
        ...headers,
      });
    return { api, token, session, call };
  }

  it('creates, writes, reads and batches; version rises with every write', async () => {
    const { call } = await adminDb();
    const created = await call('POST', 'exec', {
      sql: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE)',
    });
    expect(created.status).toBe(200);
    const v0 = created.body.version as number;
    const insert = await call('POST', 'exec', {
      sql: 'INSERT INTO notes (body) VALUES (?)',
      params: ['hello'],
    });
    expect(insert.body).toMatchObject({ success: true, rowsAffected: 1, lastInsertRowId: 1 });
    expect(insert.body.version).toBeGreaterThan(v0);
    const rows = await call('POST', 'query', {
      sql: 'SELECT id, body FROM notes WHERE body = ?',
      params: ['hello'],
    });
    expect(rows.body).toMatchObject({
      success: true,
      rows: [{ id: 1, body: 'hello' }],
      rowCount: 1,
      version: insert.body.version,
    });

    const batch = await call('POST', 'batch', {
      statements: [
        { sql: 'INSERT INTO notes (body) VALUES (?)', params: ['a'] },
        { sql: 'UPDATE notes SET body = ? WHERE id = 1', params: ['hello!'] },
      ],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results).toEqual([
      { rowsAffected: 1, lastInsertRowId: 2 },
      { rowsAffected: 1, lastInsertRowId: null }, // an UPDATE inserts no row
    ]);
    const failing = await call('POST', 'batch', {
      statements: [
        { sql: 'INSERT INTO notes (body) VALUES (?)', params: ['b'] },
        { sql: 'INSERT INTO notes (body) VALUES (?)', params: ['a'] },
      ],
    });
    expect(failing.status).toBe(400);
    expect(failing.body).toMatchObject({ error: 'SQL error', statementIndex: 1 });
    expect(failing.body.message).toMatch(/UNIQUE/);
    const count = await call('POST', 'query', { sql: 'SELECT count(*) AS n FROM notes' });
    expect(count.body.rows).toEqual([{ n: 2 }]); // 'b' rolled back with the rest

    const version = await call('GET', 'version');
    expect(version.body).toEqual({
      success: true,
      version: batch.body.version,
      sizeBytes: expect.any(Number),
    });
    const schema = await call('GET', 'schema');
    expect(schema.body.tables.map((t: Json) => t.name)).toEqual(['notes']);
    expect(schema.body.tables[0].sql).toMatch(/^CREATE TABLE notes/);
  });

  it('refuses what leaves the database or breaks the rules, with 400 SQL error', async () => {
    const { call } = await adminDb();
    await call('POST', 'exec', { sql: 'CREATE TABLE t (x)' });
    const before = await scrapeMetrics(fixture.hp);
    for (const [path, sql] of [
      ['query', 'INSERT INTO t VALUES (1)'],
      ['exec', 'SELECT * FROM t'],
      ['exec', "ATTACH DATABASE '/tmp/evil.sqlite' AS evil"],
      ['query', 'SELECT * FROM _meta'],
      ['query', 'SELECT * FROM "_META"'],
      ['exec', 'PRAGMA journal_mode = DELETE'],
      ['exec', 'BEGIN'],
      ['exec', 'INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)'],
      ['query', "SELECT load_extension('x')"],
      ['query', 'SELEC 1'],
    ] as const) {
      const res = await call('POST', path, { sql });
      expect(res.status, sql).toBe(400);
      expect(res.body.error, sql).toBe('SQL error');
    }
    expect((await call('POST', 'query', { sql: 'SELECT count(*) AS n FROM t' })).body.rows).toEqual([
      { n: 0 },
    ]);
    // Refusals are counted by class, with no SQL text in any label.
    const after = await scrapeMetrics(fixture.hp);
    const pragma = { reason: 'pragma' };
    expect(metricValue(after, 'hostplane_sqlite_guard_refusals_total', pragma)).toBeGreaterThan(
      metricValue(before, 'hostplane_sqlite_guard_refusals_total', pragma),
    );
    expect(after).not.toContain('journal_mode');
    expect((await call('POST', 'query', {})).status).toBe(400);
    expect((await call('POST', 'batch', { statements: [] })).status).toBe(400);
  });

  it('exec answers lastInsertRowId as an integer, 0 when the statement inserted no row', async () => {
    const { call } = await adminDb();
    const created = await call('POST', 'exec', { sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, x)' });
    expect(created.body).toMatchObject({ rowsAffected: 0, lastInsertRowId: 0 });
    const inserted = await call('POST', 'exec', { sql: 'INSERT INTO t (x) VALUES (1), (2)' });
    expect(inserted.body).toMatchObject({ rowsAffected: 2, lastInsertRowId: 2 });
    // Not the rowid of the INSERT before it.
    for (const sql of ['UPDATE t SET x = 3 WHERE id = 1', 'DELETE FROM t WHERE id = 2']) {
      const res = await call('POST', 'exec', { sql });
      expect(res.status, sql).toBe(200);
      expect(res.body, sql).toMatchObject({ rowsAffected: 1, lastInsertRowId: 0 });
    }
  });

  it('an exhausted AUTOINCREMENT counter is 400 SQL error with SQLite’s text, not 413; dbstat is refused by the guard', async () => {
    const { call } = await adminDb();
    await call('POST', 'exec', { sql: 'CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT, x)' });
    await call('POST', 'exec', { sql: 'INSERT INTO a (x) VALUES (1)' });
    await call('POST', 'exec', {
      sql: "UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = 'a'",
    });
    const full = await call('POST', 'exec', { sql: 'INSERT INTO a (x) VALUES (2)' });
    expect(full.status).toBe(400);
    expect(full.body).toMatchObject({ error: 'SQL error', code: 'SQLITE_FULL' });
    expect(full.body.message).toMatch(/^database or disk is full \(an AUTOINCREMENT counter/);

    const before = await scrapeMetrics(fixture.hp);
    const dbstat = await call('POST', 'query', { sql: "SELECT pageno FROM dbstat WHERE name = '_meta'" });
    expect(dbstat.status).toBe(400);
    expect(dbstat.body).toMatchObject({ error: 'SQL error', code: 'SQLITE_AUTH' });
    expect(dbstat.body.message).toMatch(/\(virtual table module: dbstat\)$/);
    const reason = { reason: 'virtual table module' };
    expect(
      metricValue(await scrapeMetrics(fixture.hp), 'hostplane_sqlite_guard_refusals_total', reason),
    ).toBe(metricValue(before, 'hostplane_sqlite_guard_refusals_total', reason) + 1);
  });

  it('round-trips big integers and blobs losslessly', async () => {
    const { call } = await adminDb();
    await call('POST', 'exec', { sql: 'CREATE TABLE v (i INTEGER, b BLOB)' });
    await call('POST', 'exec', {
      sql: 'INSERT INTO v VALUES (?, ?)',
      params: [{ $bigint: '9007199254740993' }, { $base64: 'AAEC/w==' }],
    });
    const res = await call('POST', 'query', { sql: 'SELECT i, b, i + 0 AS same FROM v' });
    expect(res.body.rows).toEqual([
      {
        i: { $bigint: '9007199254740993' },
        b: { $base64: 'AAEC/w==' },
        same: { $bigint: '9007199254740993' },
      },
    ]);
  });

  it('asks for a user session when the token requires one, and keeps read tokens and users to their rights', async () => {
    const { api, token, call } = await adminDb();
    await call('POST', 'exec', { sql: 'CREATE TABLE t (x)' });
    const noSession = await api.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 1' });
    expect(noSession.status).toBe(401);
    expect(noSession.body.hint_for_ai).toBeTypeOf('string');
    const badSession = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/query',
      { sql: 'SELECT 1' },
      { 'x-sqlite-user-token': 'f'.repeat(64) },
    );
    expect(badSession.status).toBe(401);

    await api.register(token, 'user@example.com');
    const userSession = await api.login(token, 'user@example.com');
    const asUser = (path: string, json?: unknown) =>
      api.scoped(token, path === 'version' ? 'GET' : 'POST', `/api/v1/sqlite/${path}`, json, {
        'x-sqlite-user-token': userSession,
      });
    expect((await asUser('exec', { sql: 'INSERT INTO t VALUES (1)' })).status).toBe(200);
    const vacuum = await asUser('vacuum');
    expect(vacuum.status).toBe(403);
    expect(vacuum.body.message).toBe('VACUUM requires an admin user.');
    const adminVacuum = await call('POST', 'vacuum');
    expect(adminVacuum.status).toBe(200);
    expect(adminVacuum.body).toMatchObject({
      success: true,
      sizeBefore: expect.any(Number),
      sizeAfter: expect.any(Number),
    });

    const read = await api.token({
      path: 'data/app.sqlite',
      name: 'reader',
      permissions: 'read',
      requireUserAuth: false,
    });
    const readQuery = await api.scoped(read, 'POST', '/api/v1/sqlite/query', {
      sql: 'SELECT count(*) AS n FROM t',
    });
    expect(readQuery.body.rows).toEqual([{ n: 1 }]);
    for (const [path, json] of [
      ['exec', { sql: 'INSERT INTO t VALUES (2)' }],
      ['batch', { statements: [{ sql: 'INSERT INTO t VALUES (2)' }] }],
      ['vacuum', undefined],
    ] as const) {
      const res = await api.scoped(read, 'POST', `/api/v1/sqlite/${path}`, json);
      expect(res.status, path).toBe(403);
      expect(res.body.message).toBe('This token is read-only.');
    }
    // Without user auth, any holder of a readwrite token may vacuum.
    const open = await api.token({ path: 'data/app.sqlite', name: 'open', requireUserAuth: false });
    expect((await api.scoped(open, 'POST', '/api/v1/sqlite/vacuum')).status).toBe(200);
  });

  it('loses no write among 100 concurrent ones, each with its own version', async () => {
    const { call } = await adminDb();
    await call('POST', 'exec', { sql: 'CREATE TABLE c (n INTEGER)' });
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        call('POST', 'exec', { sql: 'INSERT INTO c VALUES (?)', params: [i] }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const versions = results.map((r) => r.body.version as number);
    expect(new Set(versions).size).toBe(100);
    const rows = await call('POST', 'query', { sql: 'SELECT count(*) AS n, sum(n) AS s FROM c' });
    expect(rows.body.rows).toEqual([{ n: 100, s: 4950 }]);
    expect(rows.body.version).toBe(Math.max(...versions));
  });

  it('refuses writes with 413 once over the plan’s size cap, until DELETE frees space', async () => {
    const saved = plans.free.maxSqliteBytes;
    plans.free.maxSqliteBytes = 64 * 1024;
    try {
      const { call } = await adminDb();
      await call('POST', 'exec', { sql: 'CREATE TABLE big (b BLOB)' });
      let crossing = await call('POST', 'exec', { sql: 'INSERT INTO big VALUES (randomblob(8000))' });
      for (let writes = 1; crossing.status === 200 && writes < 100; writes++)
        crossing = await call('POST', 'exec', { sql: 'INSERT INTO big VALUES (randomblob(8000))' });
      // The write that crossed the cap was applied, and says so; the next one is refused.
      expect(crossing.status).toBe(413);
      expect(crossing.body.applied).toBe(true);
      const rowsAfterCrossing = (await call('POST', 'query', { sql: 'SELECT count(*) AS n FROM big' })).body
        .rows[0].n;
      const refused = await call('POST', 'exec', { sql: 'INSERT INTO big VALUES (randomblob(10))' });
      expect(refused.status).toBe(413);
      expect(refused.body).toMatchObject({
        error: 'SQLite size limit exceeded',
        limitBytes: 65536,
        applied: false,
      });
      expect((await call('POST', 'query', { sql: 'SELECT count(*) AS n FROM big' })).body.rows[0].n).toBe(
        rowsAfterCrossing,
      );
      expect(refused.body.sizeBytes).toBeGreaterThan(65536);
      expect((await call('POST', 'query', { sql: 'SELECT count(*) AS n FROM big' })).status).toBe(200);
      expect((await call('POST', 'exec', { sql: 'DELETE FROM big' })).status).toBe(200);
      expect((await call('POST', 'vacuum')).status).toBe(200);
      expect((await call('POST', 'exec', { sql: 'INSERT INTO big VALUES (randomblob(10))' })).status).toBe(
        200,
      );
    } finally {
      plans.free.maxSqliteBytes = saved;
    }
  });
});
