import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallEvent, SqliteEngineError, SqlitePool } from '../../../../src/sqlite/engine/index.js';

// The engine's statement rules, encodings, caps, version and size cap, on real SQLite files and
// real worker threads.

let dir: string;
let pool: SqlitePool;
let n = 0;
const file = () => path.join(dir, `db-${++n}.sqlite`);

async function failure(run: () => Promise<unknown>): Promise<SqliteEngineError> {
  const err = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'expected a failure').toBeInstanceOf(SqliteEngineError);
  return err as SqliteEngineError;
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'hp-sqlite-engine-'));
  pool = new SqlitePool({ size: 2, limits: { maxRows: 1_000, maxResultBytes: 256 * 1024 } });
});

afterAll(async () => {
  await pool?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('statement rules', () => {
  it('query runs reads only; exec runs writes only; neither changes anything when refused', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (a)');
    const v = (await db.version()).version;
    for (const sql of [
      'INSERT INTO t VALUES (1)',
      'DELETE FROM t',
      'CREATE TABLE u (a)',
      'INSERT INTO t VALUES (1) RETURNING a',
    ]) {
      expect((await failure(() => db.query(sql))).kind).toBe('statement');
    }
    expect((await failure(() => db.exec('SELECT * FROM t'))).kind).toBe('statement');
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 0 }]);
    expect((await db.version()).version).toBe(v);
  });

  it('exec reports rowsAffected and lastInsertRowId, and bumps the version by one per write', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    const created = await db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, a)');
    expect(created.rowsAffected).toBe(0);
    expect(created.lastInsertRowId).toBe(0);
    const inserted = await db.exec('INSERT INTO t (a) VALUES (?), (?)', ['x', 'y']);
    expect(inserted).toMatchObject({ rowsAffected: 2, lastInsertRowId: 2, version: created.version + 1 });
    const updated = await db.exec('UPDATE t SET a = ? WHERE id = ?', ['z', 1]);
    expect(updated).toMatchObject({ rowsAffected: 1, version: created.version + 2 });
  });

  it('lastInsertRowId is what this statement inserted: 0 from exec and null in a batch when none, never an earlier statement’s', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, a UNIQUE)');
    await db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v) WITHOUT ROWID');
    expect((await db.exec('INSERT INTO t (a) VALUES (?), (?)', ['x', 'y'])).lastInsertRowId).toBe(2);
    // Each of these inserted no row: before, UPDATE and DELETE answered the insert's rowid (2).
    for (const [sql, rows] of [
      ["UPDATE t SET a = 'z' WHERE id = 1", 1],
      ['DELETE FROM t WHERE id = 1', 1],
      ["INSERT OR IGNORE INTO t (a) VALUES ('y')", 0],
      ["INSERT INTO kv VALUES ('k', 1)", 1],
      ['CREATE INDEX t_a ON t (a)', 0],
    ] as const) {
      expect(await db.exec(sql), sql).toMatchObject({ rowsAffected: rows, lastInsertRowId: 0 });
    }
    expect((await db.exec('INSERT INTO t (id, a) VALUES (-5, ?)', ['neg'])).lastInsertRowId).toBe(-5);
    expect((await db.exec("INSERT OR REPLACE INTO t (id, a) VALUES (-5, 'again')")).lastInsertRowId).toBe(-5);

    // SQL still sees SQLite's own last_insert_rowid(): across the statements of a batch and calls.
    await db.exec('CREATE TABLE child (parent INTEGER, note)');
    const batch = await db.batch([
      { sql: "INSERT INTO t (a) VALUES ('parent')" },
      { sql: "UPDATE t SET a = 'parent!' WHERE a = 'parent'" },
      { sql: "INSERT INTO child VALUES (last_insert_rowid(), 'first')" },
      { sql: "INSERT INTO kv VALUES ('k2', last_insert_rowid())" },
    ]);
    expect(batch.results).toEqual([
      { rowsAffected: 1, lastInsertRowId: 3 },
      { rowsAffected: 1, lastInsertRowId: null },
      { rowsAffected: 1, lastInsertRowId: 1 },
      { rowsAffected: 1, lastInsertRowId: null },
    ]);
    expect((await db.query('SELECT parent FROM child')).rows).toEqual([{ parent: 3 }]);
    expect((await db.query("SELECT v FROM kv WHERE k = 'k2'")).rows).toEqual([{ v: 1 }]);
    await db.exec("UPDATE child SET note = 'x'");
    expect((await db.query('SELECT last_insert_rowid() AS r')).rows).toEqual([{ r: 1 }]);
  });

  it('errors carry the SQLite text and code', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (a UNIQUE)');
    await db.exec('INSERT INTO t VALUES (1)');
    const dup = await failure(() => db.exec('INSERT INTO t VALUES (1)'));
    expect(dup).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect(dup.message).toMatch(/UNIQUE constraint failed: t.a/);
    const syntax = await failure(() => db.query('SELEC 1'));
    expect(syntax).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_ERROR' });
    expect(syntax.message).toMatch(/syntax error/);
    expect((await failure(() => db.query('SELECT ?', []))).kind).toBe('statement');
    expect((await failure(() => db.query('SELECT ?', [{ nested: true }]))).kind).toBe('statement');
  });

  it('batch is one transaction: all or nothing, the failure names its index', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (a UNIQUE)');
    const v = (await db.version()).version;
    const err = await failure(() =>
      db.batch([
        { sql: 'INSERT INTO t VALUES (?)', params: [1] },
        { sql: 'INSERT INTO t VALUES (?)', params: [2] },
        { sql: 'INSERT INTO t VALUES (?)', params: [1] },
      ]),
    );
    expect(err).toMatchObject({ kind: 'sql', index: 2, sqliteCode: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 0 }]);
    expect((await db.version()).version).toBe(v);
    const denied = await failure(() => db.batch([{ sql: 'INSERT INTO t VALUES (5)' }, { sql: 'BEGIN' }]));
    expect(denied).toMatchObject({ kind: 'denied', index: 1 });

    const ok = await db.batch([
      { sql: 'CREATE TABLE u (b)' },
      { sql: 'INSERT INTO u VALUES (?)', params: ['x'] },
      { sql: 'INSERT INTO t VALUES (?)', params: [3] },
    ]);
    expect(ok.results).toEqual([
      { rowsAffected: 0, lastInsertRowId: null },
      { rowsAffected: 1, lastInsertRowId: 1 },
      { rowsAffected: 1, lastInsertRowId: 1 },
    ]);
    expect(ok.version).toBe(v + 1);
  });
});

describe('what applications do still works under the guard', () => {
  it('runs a typical schema: AUTOINCREMENT, foreign keys, UPSERT, STRICT, generated columns, triggers, views', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.batch([
      {
        sql: "CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT UNIQUE NOT NULL, created TEXT DEFAULT (datetime('now')), token TEXT DEFAULT (hex(randomblob(8)))) STRICT",
      },
      {
        sql: "CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE, body TEXT, words INTEGER GENERATED ALWAYS AS (length(body) - length(replace(body, ' ', '')) + 1))",
      },
      { sql: 'CREATE INDEX posts_user ON posts (user_id)' },
      { sql: 'CREATE TABLE audit (at TEXT, what TEXT)' },
      {
        sql: "CREATE TRIGGER posts_audit AFTER INSERT ON posts BEGIN INSERT INTO audit VALUES (datetime('now'), json_object('post', NEW.id)); END",
      },
      {
        sql: 'CREATE VIEW post_counts AS SELECT u.email, count(p.id) AS n FROM users u LEFT JOIN posts p ON p.user_id = u.id GROUP BY u.id',
      },
    ]);
    await db.exec("INSERT INTO users (email) VALUES ('a@example.com')");
    await db.exec(
      "INSERT INTO users (email) VALUES ('a@example.com') ON CONFLICT (email) DO UPDATE SET email = excluded.email",
    );
    await db.exec("INSERT INTO posts (user_id, body) VALUES (1, 'hello big world')");
    expect(
      (await failure(() => db.exec("INSERT INTO posts (user_id, body) VALUES (99, 'x')"))).sqliteCode,
    ).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect((await db.query('SELECT * FROM post_counts')).rows).toEqual([{ email: 'a@example.com', n: 1 }]);
    expect((await db.query('SELECT words FROM posts')).rows).toEqual([{ words: 3 }]);
    expect((await db.query("SELECT json_extract(what, '$.post') AS p FROM audit")).rows).toEqual([{ p: 1 }]);
    await db.exec('ALTER TABLE posts RENAME COLUMN body TO text');
    await db.exec('ALTER TABLE audit DROP COLUMN at');
    await db.exec('ALTER TABLE audit RENAME TO audit_log');
    await db.exec('DELETE FROM users WHERE id = 1');
    expect((await db.query('SELECT count(*) AS n FROM posts')).rows).toEqual([{ n: 0 }]);
    expect((await db.schema()).tables.map((t) => t.name)).toEqual(['audit_log', 'posts', 'users']);
  });

  it('runs full-text search, JSON, window functions and recursive CTEs', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE VIRTUAL TABLE docs USING fts5(title, body)');
    await db.exec(
      "INSERT INTO docs VALUES ('SQLite', 'small fast reliable'), ('Postgres', 'big and reliable')",
    );
    expect(
      (await db.query("SELECT title FROM docs WHERE docs MATCH 'fast' ORDER BY bm25(docs)")).rows,
    ).toEqual([{ title: 'SQLite' }]);
    expect((await db.query("SELECT value FROM json_each('[1,2,3]') WHERE value > 1")).rows).toEqual([
      { value: 2 },
      { value: 3 },
    ]);
    expect(
      (
        await db.query(
          'SELECT x, sum(x) OVER (ORDER BY x) AS running FROM (SELECT 1 AS x UNION ALL SELECT 2)',
        )
      ).rows,
    ).toEqual([
      { x: 1, running: 1 },
      { x: 2, running: 3 },
    ]);
    expect(
      (
        await db.query(
          'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) SELECT sum(x) AS s FROM c',
        )
      ).rows,
    ).toEqual([{ s: 15 }]);
    await db.exec('CREATE VIRTUAL TABLE boxes USING rtree(id, minX, maxX)');
    // Shadow tables (docs_data, boxes_node, …) are not the tenant's: schema() leaves them out.
    expect((await db.schema()).tables.map((t) => t.name)).toEqual(['boxes', 'docs']);
    await db.exec('DROP TABLE docs');
    await db.exec('ANALYZE');
    await db.exec('REINDEX boxes_parent');
    await db.exec('PRAGMA defer_foreign_keys = ON');
  });
});

describe('encodings and caps', () => {
  it('integers beyond 2^53 and blobs round-trip losslessly', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (i INTEGER, r REAL, b BLOB, s TEXT)');
    const big = { $bigint: '9223372036854775807' };
    const small = { $bigint: '-9007199254740993' };
    const blob = { $base64: Buffer.from([0, 1, 2, 255, 254]).toString('base64') };
    await db.exec('INSERT INTO t VALUES (?, ?, ?, ?)', [big, 1.5, blob, 'é']);
    await db.exec('INSERT INTO t VALUES (?, ?, ?, ?)', [small, { $real: 'Infinity' }, null, '']);
    await db.exec('INSERT INTO t VALUES (?, ?, ?, ?)', [42, 2, { $base64: '' }, true]);
    const { rows } = await db.query(
      'SELECT i, typeof(i) AS ti, r, typeof(r) AS tr, b, s FROM t ORDER BY rowid',
    );
    expect(rows).toEqual([
      { i: big, ti: 'integer', r: 1.5, tr: 'real', b: blob, s: 'é' },
      { i: small, ti: 'integer', r: { $real: 'Infinity' }, tr: 'real', b: null, s: '' },
      { i: 42, ti: 'integer', r: 2, tr: 'real', b: { $base64: '' }, s: '1' },
    ]);
    expect((await db.query('SELECT ? + 1 AS n', [{ $bigint: '9007199254740992' }])).rows).toEqual([
      { n: { $bigint: '9007199254740993' } },
    ]);
  });

  it('cuts a huge result at the row cap and says so', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    const result = await db.query(
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000000) SELECT x FROM c',
    );
    expect(result.rowCount).toBe(1_000);
    expect(result.truncated).toBe(true);
    expect(result.rows.at(-1)).toEqual({ x: 1_000 });
    const small = await db.query('SELECT 1 AS x');
    expect(small.truncated).toBe(false);
  });

  it('cuts a huge result at the byte cap and says so', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    const result = await db.query(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 500) SELECT x, printf('%.2000c', 'a') AS pad FROM c",
    );
    expect(result.truncated).toBe(true);
    expect(result.rowCount).toBeLessThan(500);
    expect(result.rowCount).toBeGreaterThan(100);
    expect(JSON.stringify(result.rows).length).toBeLessThan(256 * 1024 + 4096);
  });

  it.each([
    [
      'compound SELECT terms',
      Array.from({ length: 21 }, (_, i) => `SELECT ${i}`).join(' UNION ALL '),
      [],
      /too many terms in compound SELECT/,
    ],
    [
      'variables',
      `SELECT 1 IN (${Array.from({ length: 1000 }, () => '?').join(', ')})`,
      Array.from({ length: 1000 }, () => 1),
      /too many SQL variables/,
    ],
    [
      'expression depth',
      `SELECT ${Array.from({ length: 102 }, () => '1').join(' + ')}`,
      [],
      /Expression tree is too large/,
    ],
    [
      'result columns',
      `SELECT ${Array.from({ length: 201 }, (_, i) => `${i} AS c${i}`).join(', ')}`,
      [],
      /too many columns/,
    ],
    ['SQL length', `SELECT '${'x'.repeat(100_001)}'`, [], /too big|too long|string or blob too big/],
  ])('refuses more %s than the limit allows', async (_what, sql, params, message) => {
    const db = await pool.open(file(), { maxBytes: null });
    const err = await failure(() => db.query(sql, params));
    expect(err.kind).toBe('sql');
    expect(err.message).toMatch(message);
  });

  it('refuses strings and blobs over the length limit', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    const err = await failure(() => db.query('SELECT zeroblob(100000000) AS z'));
    expect(err).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_TOOBIG' });
  });
});

describe('version', () => {
  it('100 concurrent writes: none lost, every version distinct and strictly increasing per call order', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    const start = (await db.exec('CREATE TABLE t (i INTEGER)')).version;
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => db.exec('INSERT INTO t (i) VALUES (?)', [i])),
    );
    const versions = results.map((r) => r.version);
    expect(versions).toEqual(Array.from({ length: 100 }, (_, i) => start + i + 1));
    expect((await db.query('SELECT count(*) AS n, count(DISTINCT i) AS d FROM t')).rows).toEqual([
      { n: 100, d: 100 },
    ]);
    expect((await db.version()).version).toBe(start + 100);
  });

  it('is kept across reopen, and version() answers from memory', async () => {
    const f = file();
    const db = await pool.open(f, { maxBytes: null });
    await db.exec('CREATE TABLE t (a)');
    const { version } = await db.exec('INSERT INTO t VALUES (1)');
    await db.close();
    const again = await pool.open(f, { maxBytes: null });
    expect((await again.version()).version).toBe(version);
    // From memory: answered without a worker round trip, so at once while the worker is busy (an
    // endless query, until its deadline).
    const busy = again
      .query('WITH c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c')
      .catch((e: unknown) => e);
    const started = performance.now();
    expect((await again.version()).version).toBe(version);
    expect(performance.now() - started).toBeLessThan(20);
    expect(await busy).toMatchObject({ kind: 'timeout' });
  });

  it('reports each call with its queue wait and run time', async () => {
    const events: CallEvent[] = [];
    const own = new SqlitePool({ size: 1, onCall: (e) => events.push(e) });
    try {
      const db = await own.open(file(), { maxBytes: null });
      await Promise.all([
        db.exec('CREATE TABLE t (a)'),
        db.query('SELECT * FROM nope').catch(() => undefined),
      ]);
      expect(events.map((e) => [e.op, e.outcome])).toEqual([
        ['open', 'ok'],
        ['exec', 'ok'],
        ['query', 'sql'],
      ]);
      for (const e of events) {
        expect(e.queueMs).toBeGreaterThanOrEqual(0);
        expect(e.runMs).toBeGreaterThan(0);
      }
      // Sent in one message, run one after the other: the query waited for the exec.
      expect(events[2]?.queueMs).toBeGreaterThanOrEqual(events[1]?.runMs ?? Infinity);
    } finally {
      await own.close();
    }
  });

  it('opening the same file twice gives the same database; databases spread over the workers', async () => {
    const f = file();
    const a = await pool.open(f, { maxBytes: null });
    const b = await pool.open(f, { maxBytes: null });
    expect(a).toBe(b);
    await b.close();
    await a.exec('CREATE TABLE t (a)'); // still open: one close left
    await a.close();
    await expect(a.exec('INSERT INTO t VALUES (1)')).rejects.toMatchObject({ kind: 'closed' });
    const stats = pool.stats();
    expect(stats.workers).toBe(2);
    const [x, y] = stats.databasesPerWorker;
    expect(Math.abs((x ?? 0) - (y ?? 0))).toBeLessThanOrEqual(1);
  });
});

describe('a worker that dies', () => {
  it('fails its calls as closed; the file opens again on a fresh worker with its data', async () => {
    const own = new SqlitePool({ size: 1 });
    try {
      const f = file();
      const db = await own.open(f, { maxBytes: null });
      await db.exec('CREATE TABLE t (a)');
      const { version } = await db.exec('INSERT INTO t VALUES (1)');
      // No public way to kill a worker: reach it as a crash would.
      const slots = (own as unknown as { slots: { worker: { terminate(): Promise<number> } }[] }).slots;
      await slots[0]?.worker.terminate();
      await expect(db.query('SELECT * FROM t')).rejects.toMatchObject({ kind: 'closed' });
      const again = await own.open(f, { maxBytes: null });
      expect(again).not.toBe(db);
      expect((await again.query('SELECT a FROM t')).rows).toEqual([{ a: 1 }]);
      expect((await again.version()).version).toBe(version);
    } finally {
      await own.close();
    }
  });
});

describe('size cap', () => {
  it('applies the crossing write, then refuses writes until DELETE and VACUUM free space; reads keep working', async () => {
    const cap = 256 * 1024;
    const db = await pool.open(file(), { maxBytes: cap });
    await db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, pad BLOB)');
    let crossing: SqliteEngineError | undefined;
    let inserts = 0;
    while (!crossing && inserts < 100) {
      crossing = await db.exec('INSERT INTO t (pad) VALUES (randomblob(20000))').then(
        () => undefined,
        (e: SqliteEngineError) => e,
      );
      inserts++;
    }
    expect(crossing).toMatchObject({ kind: 'size', applied: true, limitBytes: cap });
    expect(crossing?.sizeBytes).toBeGreaterThan(cap);
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: inserts }]);
    const version = (await db.version()).version;
    expect(crossing?.version).toBe(version);

    const refused = await failure(() => db.exec("INSERT INTO t (pad) VALUES (X'01')"));
    expect(refused).toMatchObject({ kind: 'size', applied: false });
    expect((await failure(() => db.exec('UPDATE t SET pad = NULL'))).kind).toBe('size');
    expect((await db.version()).version).toBe(version);
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: inserts }]);

    // DELETE frees pages (the cap counts used pages), so writes run again; VACUUM shrinks the file.
    const deleted = await db.exec('DELETE FROM t WHERE id > 2');
    expect(deleted.sizeBytes).toBeLessThan(cap);
    await db.exec("INSERT INTO t (pad) VALUES (X'01')");
    const vacuumed = await db.vacuum();
    expect(vacuumed.sizeBefore).toBeGreaterThan(cap);
    expect(vacuumed.sizeAfter).toBeLessThan(cap);
    expect(vacuumed.version).toBe((await db.version()).version);
  });

  it('a single write far beyond the cap hits max_page_count and is refused as a size error', async () => {
    const cap = 64 * 1024;
    const db = await pool.open(file(), { maxBytes: cap });
    await db.exec('CREATE TABLE t (pad BLOB)');
    const err = await failure(() =>
      db.exec(
        'INSERT INTO t WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 200) SELECT randomblob(20000) FROM c',
      ),
    );
    expect(err).toMatchObject({ kind: 'size', applied: false });
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 0 }]);
  });

  it('an AUTOINCREMENT counter at its maximum is an SQL error with SQLite’s text, not the size cap', async () => {
    for (const maxBytes of [10 * 1024 * 1024, null]) {
      const db = await pool.open(file(), { maxBytes });
      await db.exec('CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT, x)');
      await db.exec('INSERT INTO a (x) VALUES (1)');
      await db.exec("UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = 'a'");
      const err = await failure(() => db.exec('INSERT INTO a (x) VALUES (2)'));
      expect(err, String(maxBytes)).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_FULL' });
      expect(err.message).toMatch(/^database or disk is full \(an AUTOINCREMENT counter is at its maximum/);
      const inBatch = await failure(() =>
        db.batch([{ sql: 'DELETE FROM a' }, { sql: 'INSERT INTO a (x) VALUES (3)' }]),
      );
      expect(inBatch).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_FULL', index: 1 });

      // A counter lowered under a row inserted with the largest rowid: SQLite takes the larger.
      await db.exec("INSERT INTO a (id, x) VALUES (9223372036854775807, 'last')");
      await db.exec("UPDATE sqlite_sequence SET seq = 5 WHERE name = 'a'");
      expect(await failure(() => db.exec('INSERT INTO a (x) VALUES (4)'))).toMatchObject({ kind: 'sql' });
      expect((await db.query('SELECT count(*) AS n FROM a')).rows).toEqual([{ n: 2 }]);
    }
  });

  it('a full disk is the server’s fault (storage, a 503), not the tenant’s SQL nor the size cap', async (ctx) => {
    for (const maxBytes of [null, 50 * 1024 * 1024]) {
      // A real full filesystem: a 2 MiB tmpfs each (mounting needs root, which CI has).
      const mountPoint = mkdtempSync(path.join(tmpdir(), 'hp-full-disk-'));
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mountPoint], { stdio: 'pipe' });
      } catch (err) {
        rmSync(mountPoint, { recursive: true, force: true });
        if (process.env.CI) throw new Error(`cannot mount a tmpfs for the full-disk test: ${String(err)}`);
        ctx.skip();
        return;
      }
      const db = await pool.open(path.join(mountPoint, 'app.sqlite'), { maxBytes });
      try {
        await db.exec('CREATE TABLE t (b BLOB)');
        const err = await failure(async () => {
          for (let i = 0; i < 100; i++) await db.exec('INSERT INTO t VALUES (randomblob(100000))');
        });
        expect(err, String(maxBytes)).toMatchObject({ kind: 'storage', sqliteCode: 'SQLITE_FULL' });
        expect(err.retryAfterSeconds).toBeGreaterThan(0);
      } finally {
        await db.close().catch(() => undefined);
        execFileSync('umount', ['-l', mountPoint]);
        rmSync(mountPoint, { recursive: true, force: true });
      }
    }
  });
});
