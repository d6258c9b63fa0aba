import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorResponse } from '../../../../src/http/index.js';
import { createLogger } from '../../../../src/observability/index.js';
import type { Worker } from 'node:worker_threads';
import { engineError } from '../../../../src/sqlite/crud-ops.js';
import { LocalShard, localDatabaseFiles } from '../../../../src/sqlite/index.js';
import {
  type CallEvent,
  type SqliteDatabase,
  SqliteEngineError,
  SqlitePool,
  type StatementInput,
} from '../../../../src/sqlite/engine/index.js';

// Issue 16, the engine's denials of service: no argument takes the process down, no row outgrows
// the answer's cap, and one database's queue neither grows without bound nor starves the others.

let dir: string;
let n = 0;
const file = () => path.join(dir, `db-${++n}.sqlite`);
const pools: SqlitePool[] = [];
const newPool = (...args: ConstructorParameters<typeof SqlitePool>) => {
  const pool = new SqlitePool(...args);
  pools.push(pool);
  return pool;
};

/** Nested arrays `depth` levels deep around `leaf`. */
function deep(depth: number, leaf: unknown = 1): unknown {
  let value: unknown = leaf;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** Runs until its deadline interrupts it. */
const ENDLESS = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c';

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'hp-sqlite-hardening-'));
});

afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('the dispatch survives every argument', () => {
  it('fuzzes query, exec and batch with deep, wide and odd arguments: each settles, the engine still answers', async () => {
    const pool = newPool({ size: 1 });
    const db = await pool.open(file(), { maxBytes: null });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const wideObject = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i]));
    const odd: unknown[] = [
      deep(5_000),
      deep(20_000),
      deep(100_000, { $base64: 'AA==' }),
      [deep(10_000)],
      Array.from({ length: 100_000 }, () => 1),
      Array.from({ length: 1_000 }, () => deep(200)),
      wideObject,
      cyclic,
      [() => 1],
      [Symbol('s')],
      [new Map([[1, 2]])],
      [new Date(0)],
      [undefined],
      [10n],
      [NaN, Infinity],
      [{ $bigint: '1', extra: 1 }],
      'not a list',
      42,
      null,
    ];
    const outcomes: Promise<unknown>[] = [];
    for (const params of odd) {
      outcomes.push(db.query('SELECT ? AS a', params as unknown[]));
      outcomes.push(db.exec('CREATE TABLE IF NOT EXISTS t (a)', params as unknown[]));
      outcomes.push(db.batch([{ sql: 'CREATE TABLE IF NOT EXISTS t (a)', params } as StatementInput]));
      outcomes.push(db.batch(params as StatementInput[]));
    }
    // All in one turn of the event loop: one message to the worker, which must not sink them all.
    const settled = await Promise.allSettled(outcomes);
    for (const outcome of settled) {
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(SqliteEngineError);
    }
    // The deepest ones are refused by the clone, as a bad statement, not a crash.
    const deepest = await db.query('SELECT ? AS a', deep(100_000) as unknown[]).catch((e: unknown) => e);
    expect(deepest).toMatchObject({ kind: 'statement', message: expect.stringMatching(/cannot be sent/) });
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});

describe('a worker that dies', () => {
  it('fails its pending calls (closed, a 503) and the shard reopens the database on a new worker', async () => {
    const shard = new LocalShard(
      localDatabaseFiles(dir),
      async () => true,
      () => newPool({ size: 1 }),
    );
    const db = await shard.handle({ id: 1 }, null);
    await db.exec('CREATE TABLE t (a)');
    const pending = db.query(ENDLESS).catch((e: unknown) => e);
    await (db as unknown as { slot: { worker: Worker } }).slot.worker.terminate();
    const failed = await pending;
    expect(failed).toMatchObject({ kind: 'closed' });
    expect(errorResponse(engineError(failed), createLogger('silent'), 'r')).toMatchObject({
      status: 503,
      headers: { 'Retry-After': '1' },
    });
    expect(db.usable).toBe(false);
    const again = await shard.handle({ id: 1 }, null);
    expect(again.usable).toBe(true);
    expect((await again.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 0 }]);
  });
});

describe('a row cannot outgrow the answer', () => {
  let pool: SqlitePool;
  let db: SqliteDatabase;
  beforeAll(async () => {
    pool = newPool({ size: 1 }); // the default caps: 8 MiB per answer, 2,000,000 bytes per value
    db = await pool.open(file(), { maxBytes: null });
  });
  const wide = (columns: number, bytes: number) =>
    Array.from({ length: columns }, (_, i) => `printf('%.${bytes}c', 'x') AS c${i}`).join(', ');

  it('refuses one row of 40 columns of 2 MB each (the first row over: a 400, SQLITE_TOOBIG)', async () => {
    const started = performance.now();
    const err = await db.query(`SELECT ${wide(40, 2_000_000)}`).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_TOOBIG' });
    expect((err as Error).message).toMatch(/cap/);
    expect(performance.now() - started).toBeLessThan(pool.limits.statementTimeoutMs);
  });

  it('cuts the answer at the row that does not fit, with truncated', async () => {
    const columns = Array.from(
      { length: 20 },
      (_, i) => `CASE WHEN x = 1 THEN 'small' ELSE printf('%.1000000c', 'x') END AS c${i}`,
    );
    const result = await db.query(`SELECT ${columns.join(', ')} FROM (SELECT 1 AS x UNION ALL SELECT 2)`);
    expect(result.truncated).toBe(true);
    expect(result.rowCount).toBe(1);
    expect(result.rows[0]!.c0).toBe('small');
  });

  it('counts the answer as JSON: a first row whose escapes take it past the cap is refused, not answered', async () => {
    // 1,500,000 control characters: 1.5 MB for SQLite, 9 MB written as JSON (\u0001 each).
    const controls = "replace(hex(zeroblob(750000)), '0', char(1))";
    const err = await db.query(`SELECT ${controls} AS a`).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'sql', sqliteCode: 'SQLITE_TOOBIG' });
    // Within the cap as JSON: answered whole.
    const small = await db.query("SELECT replace(hex(zeroblob(500)), '0', char(1)) AS a");
    expect(small.rows[0]?.a).toHaveLength(1000);
  });

  it('keeps each value within 2,000,000 bytes for one column, and the answer near its cap', async () => {
    expect((await db.query("SELECT printf('%.1999999c', 'x') AS a")).rows[0]!.a).toHaveLength(1_999_999);
    const over = await db.query("SELECT printf('%.2000001c', 'x') AS a").catch((e: unknown) => e);
    expect(over).toMatchObject({ sqliteCode: 'SQLITE_TOOBIG' });
    const many = await db.query(
      `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 50) SELECT ${wide(4, 1_000_000)} FROM c`,
    );
    expect(many.truncated).toBe(true);
    expect(many.rowCount).toBe(2); // 4 MB each: a third would pass the 8 MiB cap
    expect(JSON.stringify(many.rows).length).toBeLessThan(pool.limits.maxResultBytes);
    // A write makes no value (so no row) over 2,000,000 bytes either.
    await db.exec('CREATE TABLE big (a, b)');
    const write = await db
      .exec("INSERT INTO big VALUES (printf('%.1500000c', 'x'), printf('%.1500000c', 'x'))")
      .catch((e: unknown) => e);
    expect(write).toMatchObject({ sqliteCode: 'SQLITE_TOOBIG' });
  });
});

describe('fair turns between databases', () => {
  it('another database’s SELECT 1 waits about one deadline behind ten slow statements, not all ten', async () => {
    const events: CallEvent[] = [];
    const pool = newPool({ size: 1, limits: { statementTimeoutMs: 400 }, onCall: (e) => events.push(e) });
    const noisy = await pool.open(file(), { maxBytes: null });
    const quiet = await pool.open(file(), { maxBytes: null });
    expect(pool.stats().databasesPerWorker).toEqual([2]);

    // Sent together (one message): the quiet call is served second, not eleventh.
    const slow = Array.from({ length: 10 }, () => noisy.query(ENDLESS).catch((e: unknown) => e));
    let started = performance.now();
    await quiet.query('SELECT 1');
    expect(performance.now() - started).toBeLessThan(2 * 400 + 300);

    // Sent while a slow statement runs: it goes next.
    const firstDone = events.length;
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (events.length > firstDone) resolve(void clearInterval(check));
      }, 5);
    });
    started = performance.now();
    await quiet.query('SELECT 1');
    expect(performance.now() - started).toBeLessThan(2 * 400 + 300);
    for (const outcome of await Promise.all(slow)) expect(outcome).toMatchObject({ kind: 'timeout' });
  });

  it('another database’s calls run between the statements of a long batch, which still commits them all', async () => {
    const pool = newPool({ size: 1 }); // the default deadlines: 2 s per statement, 10 s per batch
    const noisy = await pool.open(file(), { maxBytes: null });
    const quiet = await pool.open(file(), { maxBytes: null });
    await noisy.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, a)');
    await quiet.exec('CREATE TABLE u (id INTEGER PRIMARY KEY, a)');
    const versionBefore = (await noisy.exec('INSERT INTO t (id, a) VALUES (100, 0)')).version;
    await noisy.exec('DELETE FROM t');

    // Statements of about 600 ms (a third of their deadline), measured on this machine now.
    const count = (limit: number) =>
      `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT ${limit}) SELECT max(x) FROM c`;
    let started = performance.now();
    await quiet.query(count(300_000));
    const limit = Math.max(10_000, Math.round((300_000 * 600) / (performance.now() - started)));
    const slowInsert = { sql: `INSERT INTO t (a) ${count(limit)}` };
    const statements: StatementInput[] = [
      ...Array.from({ length: 8 }, () => slowInsert),
      { sql: 'UPDATE t SET a = a WHERE id = 1' }, // inserts nothing: no rowid, whatever ran between
      { sql: 'INSERT INTO t (a) VALUES (last_insert_rowid())' }, // the batch's own last rowid: 8
    ];

    // Sent together (one message): the batch runs first, the quiet call after one statement.
    started = performance.now();
    const batch = noisy.batch(statements);
    await quiet.query('SELECT 1');
    const firstWait = performance.now() - started;
    // Sent while the batch runs: served at its next pause; a write on another connection meanwhile.
    started = performance.now();
    const written = await quiet.exec('INSERT INTO u (id, a) VALUES (1000, 1)');
    const secondWait = performance.now() - started;
    const result = await batch;
    const batchMs = performance.now() - started + firstWait;

    // It was long (the waits below are not just a short batch), and each call ran in its course,
    // not after it: measured against the batch itself, so a loaded machine moves both alike.
    expect(batchMs).toBeGreaterThan(2_000);
    expect(firstWait).toBeLessThan(batchMs / 2);
    expect(secondWait).toBeLessThan(batchMs / 2);
    expect(written).toMatchObject({ rowsAffected: 1, lastInsertRowId: 1000 });
    expect(result.results).toEqual([
      ...Array.from({ length: 8 }, (_, i) => ({ rowsAffected: 1, lastInsertRowId: i + 1 })),
      { rowsAffected: 1, lastInsertRowId: null },
      { rowsAffected: 1, lastInsertRowId: 9 },
    ]);
    expect(result.version).toBe(versionBefore + 2);
    expect((await noisy.query('SELECT a FROM t WHERE id = 9')).rows).toEqual([{ a: 8 }]);
    expect((await noisy.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 9 }]);
    expect((await quiet.query('SELECT count(*) AS n FROM u')).rows).toEqual([{ n: 1 }]);
  });

  it('does not count the time it lets other databases have against the batch’s own deadline', async () => {
    const pool = newPool({ size: 1, limits: { statementTimeoutMs: 1_000, batchTimeoutMs: 3_000 } });
    const noisy = await pool.open(file(), { maxBytes: null });
    const quiet = await pool.open(file(), { maxBytes: null });
    await noisy.exec('CREATE TABLE t (a)');
    const count = (limit: number) =>
      `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT ${limit}) SELECT max(x) FROM c`;
    const started = performance.now();
    await noisy.query(count(150_000));
    const limit = Math.max(10_000, Math.round((150_000 * 200) / (performance.now() - started)));
    // Five statements of about 200 ms (1 s of the batch's 3 s, each a fifth of its own 1 s
    // deadline: room for a loaded machine), and four of another database's calls served between
    // them, 1 s each (their deadline): 5 s in all, past the batch's 3 s, and the batch commits.
    const batch = noisy
      .batch(Array.from({ length: 5 }, () => ({ sql: `INSERT INTO t (a) ${count(limit)}` })))
      .catch((e: unknown) => e);
    const others = Array.from({ length: 4 }, () => quiet.query(ENDLESS).catch((e: unknown) => e));
    for (const outcome of await Promise.all(others)) expect(outcome).toMatchObject({ kind: 'timeout' });
    expect(await batch).toMatchObject({ results: Array.from({ length: 5 }, () => ({ rowsAffected: 1 })) });
    expect((await noisy.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 5 }]);
  });

  it('bounds each database’s queue (busy, 429) and the worker’s (overloaded, 503), with Retry-After', async () => {
    const pool = newPool({
      size: 1,
      limits: { statementTimeoutMs: 300, maxQueuedPerDatabase: 3, maxQueuedPerWorker: 5 },
    });
    const a = await pool.open(file(), { maxBytes: null });
    const b = await pool.open(file(), { maxBytes: null });
    const c = await pool.open(file(), { maxBytes: null });
    const queued = [1, 2, 3].map(() => a.query(ENDLESS).catch((e: unknown) => e));
    const busy = await a.query('SELECT 1').catch((e: unknown) => e);
    expect(busy).toMatchObject({ kind: 'busy', retryAfterSeconds: 1 });
    queued.push(
      b.query(ENDLESS).catch((e: unknown) => e),
      b.query(ENDLESS).catch((e: unknown) => e),
    );
    // The worker is full, but a database with nothing waiting is admitted (one account's full
    // queues do not shut every other database out); its second call is not.
    const first = c.query('SELECT 1 AS x');
    const overloaded = await c.query('SELECT 1').catch((e: unknown) => e);
    expect(overloaded).toMatchObject({ kind: 'overloaded', retryAfterSeconds: 1 });
    expect(await b.query('SELECT 1').catch((e: unknown) => e)).toMatchObject({ kind: 'overloaded' });
    expect((await first).rows).toEqual([{ x: 1 }]);
    await Promise.all(queued);
    // Drained: both take calls again.
    expect((await a.query('SELECT 1 AS x')).rows).toEqual([{ x: 1 }]);
    expect((await c.query('SELECT 1 AS x')).rows).toEqual([{ x: 1 }]);

    const logger = createLogger('silent');
    const tooMany = errorResponse(engineError(busy), logger, 'r1');
    expect(tooMany).toMatchObject({ status: 429, headers: { 'Retry-After': '1' } });
    expect(tooMany.body).toMatchObject({ error: 'Too Many Requests', retry_after: 1 });
    const unavailable = errorResponse(engineError(overloaded), logger, 'r2');
    expect(unavailable).toMatchObject({ status: 503, headers: { 'Retry-After': '1' } });
  });
});
