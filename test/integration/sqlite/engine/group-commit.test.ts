import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallEvent, SqliteEngineError, SqlitePool } from '../../../../src/sqlite/engine/index.js';

// Group commit: exec calls of one database queued together on its worker run in one transaction,
// each in its own SAVEPOINT, under one COMMIT; each call is answered as if it had run alone.

let dir: string;
let pool: SqlitePool;
const events: CallEvent[] = [];
let n = 0;
const file = () => path.join(dir, `db-${++n}.sqlite`);

async function settle<T>(calls: Promise<T>[]): Promise<(T | SqliteEngineError)[]> {
  return Promise.all(calls.map((c) => c.catch((e: unknown) => e as SqliteEngineError)));
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'hp-sqlite-group-'));
  pool = new SqlitePool({ size: 1, limits: { statementTimeoutMs: 300 }, onCall: (e) => events.push(e) });
});

afterAll(async () => {
  await pool?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('group commit', () => {
  it('100 concurrent inserts into one database share commits, and each is answered with its own id, count and version', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    const start = (await db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, a)')).version;
    events.length = 0;
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => db.exec('INSERT INTO t (a) VALUES (?), (?)', [i, -i])),
    );
    // Each call its own rowids, its own count, its own version, in call order.
    expect(results.map((r) => r.lastInsertRowId)).toEqual(Array.from({ length: 100 }, (_, i) => 2 * i + 2));
    expect(results.every((r) => r.rowsAffected === 2)).toBe(true);
    expect(results.map((r) => r.version)).toEqual(Array.from({ length: 100 }, (_, i) => start + i + 1));
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 200 }]);
    expect((await db.version()).version).toBe(start + 100);
    // They went out in one message: most of them committed with others.
    const groups = events.filter((e) => e.op === 'exec').map((e) => e.group ?? 1);
    expect(groups).toHaveLength(100);
    expect(Math.max(...groups)).toBeGreaterThan(1);
    expect(groups.filter((g) => g > 1).length).toBeGreaterThan(50);
  });

  it('one call that violates a constraint fails alone; the others in its commit are applied', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER NOT NULL)');
    await db.exec("INSERT INTO t VALUES ('taken', 0)");
    events.length = 0;
    const calls = Array.from({ length: 30 }, (_, i) =>
      i === 10
        ? db.exec('INSERT INTO t VALUES (?, ?)', ['taken', i]) // UNIQUE
        : i === 20
          ? db.exec('INSERT INTO t VALUES (?, NULL)', [`k${i}`]) // NOT NULL
          : db.exec('INSERT INTO t VALUES (?, ?)', [`k${i}`, i]),
    );
    const results = await settle(calls);
    expect(results[10]).toBeInstanceOf(SqliteEngineError);
    expect(results[10]).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(results[20]).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_CONSTRAINT_NOTNULL' });
    const ok = results.filter((r) => !(r instanceof SqliteEngineError));
    expect(ok).toHaveLength(28);
    // Versions count the applied calls only, one each, in order.
    const versions = ok.map((r) => (r as { version: number }).version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(28);
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 29 }]);
    expect((await db.query("SELECT n FROM t WHERE k = 'taken'")).rows).toEqual([{ n: 0 }]);
    expect(events.filter((e) => e.op === 'exec' && (e.group ?? 1) > 1).length).toBeGreaterThan(1);
  });

  it('a call that runs past its deadline fails alone, as a timeout; the others are applied', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (a)');
    const slow =
      'INSERT INTO t SELECT x FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c) WHERE x < 0';
    const calls = Array.from({ length: 9 }, (_, i) =>
      i === 4 ? db.exec(slow) : db.exec('INSERT INTO t VALUES (?)', [i]),
    );
    const results = await settle(calls);
    expect(results[4]).toMatchObject({ kind: 'timeout' });
    expect(results.filter((r) => r instanceof SqliteEngineError)).toHaveLength(1);
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 8 }]);
  });

  it('a statement that is not a write, or a reserved name, is refused per call; the rest commit', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (a)');
    const results = await settle([
      db.exec('INSERT INTO t VALUES (1)'),
      db.exec('SELECT * FROM t'),
      db.exec('INSERT INTO t VALUES (2)'),
      db.exec('CREATE TABLE u (a)'),
      db.exec('ALTER TABLE u RENAME TO _hp_mine'),
      db.exec('INSERT INTO t VALUES (3)'),
      db.exec('INSERT INTO t VALUES (?)', [{ bad: 1 }]),
    ]);
    expect(results[1]).toMatchObject({ kind: 'statement' });
    expect(results[4]).toMatchObject({ kind: 'denied' });
    expect(results[6]).toBeInstanceOf(SqliteEngineError);
    expect(results.filter((r) => r instanceof SqliteEngineError)).toHaveLength(3);
    expect((await db.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 3 }]);
    const tables = (await db.schema()).tables.map((t) => t.name).sort();
    expect(tables).toEqual(['t', 'u']);
  });

  it('the size cap holds per call: the crossing call is applied and told so, the next ones refused', async () => {
    const db = await pool.open(file(), { maxBytes: 64 * 1024 });
    await db.exec('CREATE TABLE t (a)');
    const big = 'x'.repeat(30_000);
    const results = await settle(Array.from({ length: 6 }, () => db.exec('INSERT INTO t VALUES (?)', [big])));
    const kinds = results.map((r) =>
      r instanceof SqliteEngineError ? `${r.kind}:${String(r.toData().applied)}` : 'ok',
    );
    const crossing = kinds.indexOf('size:true');
    expect(crossing).toBeGreaterThan(0);
    expect(kinds.slice(0, crossing).every((k) => k === 'ok')).toBe(true);
    expect(kinds.slice(crossing + 1).every((k) => k === 'size:false')).toBe(true);
    const rows = (await db.query('SELECT count(*) AS n FROM t')).rows[0] as { n: number };
    expect(rows.n).toBe(crossing + 1);
    // A DELETE still runs, in a group or alone.
    await db.exec('DELETE FROM t');
  });

  it('a deferred foreign key that fails at COMMIT fails its own call only', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE p (id INTEGER PRIMARY KEY)');
    await db.exec(
      'CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)',
    );
    await db.exec('INSERT INTO p VALUES (1)');
    const results = await settle([
      db.exec('INSERT INTO c (p) VALUES (1)'),
      db.exec('INSERT INTO c (p) VALUES (99)'),
      db.exec('INSERT INTO c (p) VALUES (1)'),
    ]);
    expect(results[1]).toMatchObject({ kind: 'sql' });
    expect(results.filter((r) => r instanceof SqliteEngineError)).toHaveLength(1);
    expect((await db.query('SELECT count(*) AS n FROM c')).rows).toEqual([{ n: 2 }]);
  });

  it('reads and batches keep their place between writes: a query sees exactly the writes sent before it', async () => {
    const db = await pool.open(file(), { maxBytes: null });
    await db.exec('CREATE TABLE t (a)');
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 10; i++) calls.push(db.exec('INSERT INTO t VALUES (?)', [i]));
    calls.push(db.query('SELECT count(*) AS n FROM t'));
    calls.push(db.batch([{ sql: 'INSERT INTO t VALUES (100)' }, { sql: 'INSERT INTO t VALUES (101)' }]));
    for (let i = 0; i < 5; i++) calls.push(db.exec('INSERT INTO t VALUES (?)', [i]));
    calls.push(db.query('SELECT count(*) AS n FROM t'));
    const results = await Promise.all(calls);
    expect((results[10] as { rows: unknown[] }).rows).toEqual([{ n: 10 }]);
    expect((results[17] as { rows: unknown[] }).rows).toEqual([{ n: 17 }]);
  });
});
