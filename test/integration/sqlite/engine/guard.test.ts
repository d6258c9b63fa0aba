import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locateNativeParts } from '../../../../src/config/index.js';
import { type SqliteDatabase, SqliteEngineError, SqlitePool } from '../../../../src/sqlite/engine/index.js';

// The guard's threat table, one test each, against real SQLite files on real worker threads.
// Every refusal must change nothing: the version stays where it was.

const DEADLINE_MS = 400;
const native = locateNativeParts();
let dir: string;
let pool: SqlitePool;
let db: SqliteDatabase;

async function refusal(run: () => Promise<unknown>): Promise<SqliteEngineError> {
  const before = (await db.version()).version;
  const err = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'expected a refusal').toBeInstanceOf(SqliteEngineError);
  expect((await db.version()).version).toBe(before);
  return err as SqliteEngineError;
}

const denied = async (sql: string, via: 'query' | 'exec' = 'exec') => {
  const err = await refusal(() => (via === 'query' ? db.query(sql) : db.exec(sql)));
  expect(err.kind, `${sql}: ${err.message}`).toBe('denied');
  return err;
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'hp-sqlite-guard-'));
  pool = new SqlitePool({ size: 1, limits: { statementTimeoutMs: DEADLINE_MS } });
  db = await pool.open(path.join(dir, 'app.sqlite'), { maxBytes: null });
  await db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
  await db.exec("INSERT INTO notes (body) VALUES ('hello')");
});

afterAll(async () => {
  await pool?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('files outside the database', () => {
  it('ATTACH is refused and creates no file', async () => {
    const target = path.join(dir, 'attached.sqlite');
    const err = await denied(`ATTACH DATABASE '${target}' AS other`);
    expect(err.sqliteCode).toBe('SQLITE_AUTH');
    expect(existsSync(target)).toBe(false);
  });

  it('ATTACH through the sqlite_attach path of an expression is refused too', async () => {
    const target = path.join(dir, 'attached2.sqlite');
    await denied(`ATTACH '${dir}' || '/attached2.sqlite' AS other`);
    expect(existsSync(target)).toBe(false);
  });

  it('DETACH is refused', async () => {
    await denied('DETACH DATABASE main');
  });

  it('VACUUM INTO a path is refused and writes no file', async () => {
    // Through the engine it fails inside the engine's transaction; the guard's own refusal (outside
    // any transaction) is tested on a bare connection below.
    const target = path.join(dir, 'copy.sqlite');
    await refusal(() => db.exec(`VACUUM INTO '${target}'`));
    expect(existsSync(target)).toBe(false);
  });

  it('the guard itself refuses VACUUM INTO and VACUUM on a bare connection in autocommit mode', () => {
    const bare = new Database(path.join(dir, 'bare.sqlite'), { nativeBinding: native.binding });
    try {
      bare.loadExtension(native.guard);
      const secret = bare.prepare("SELECT _hp_guard('init')").pluck().get() as string;
      bare.prepare("SELECT _hp_guard(?, 'tenant', 1000)").run(secret);
      const target = path.join(dir, 'bare-copy.sqlite');
      expect(() => bare.exec(`VACUUM INTO '${target}'`)).toThrow(/authorization denied/);
      expect(existsSync(target)).toBe(false);
      expect(() => bare.exec('VACUUM')).toThrow(/authorization denied/);
      expect(bare.prepare("SELECT _hp_guard(?, 'status')").pluck().get(secret)).toBe('attach');
    } finally {
      bare.close();
      rmSync(path.join(dir, 'bare.sqlite'), { force: true });
    }
  });

  it('load_extension() is refused', async () => {
    const err = await denied("SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')", 'query');
    expect(err.reason).toBe('function: load_extension');
  });

  it('leaves only the database and its WAL files in the folder', () => {
    expect(readdirSync(dir).sort()).toEqual(['app.sqlite', 'app.sqlite-shm', 'app.sqlite-wal']);
  });
});

describe('PRAGMAs that change durability, locking, limits or schema internals', () => {
  it.each([
    'PRAGMA journal_mode = DELETE',
    'PRAGMA journal_mode',
    'PRAGMA synchronous = OFF',
    'PRAGMA locking_mode = EXCLUSIVE',
    'PRAGMA max_page_count = 1000000000',
    'PRAGMA writable_schema = ON',
    'PRAGMA mmap_size = 1073741824',
    'PRAGMA page_size = 65536',
    'PRAGMA cache_size = -2000000',
    'PRAGMA temp_store = MEMORY',
    'PRAGMA schema_version = 1',
    'PRAGMA foreign_keys = OFF',
    'PRAGMA trusted_schema = ON',
    'PRAGMA query_only = ON',
    'PRAGMA busy_timeout = 0',
    'PRAGMA wal_autocheckpoint = 0',
    'PRAGMA wal_checkpoint(TRUNCATE)',
    'PRAGMA auto_vacuum = FULL',
    'PRAGMA secure_delete = OFF',
    'PRAGMA cell_size_check = OFF',
    'PRAGMA integrity_check',
    'PRAGMA database_list',
    'PRAGMA compile_options',
    'PRAGMA table_info(_meta)',
    'PRAGMA optimize',
  ])('%s is refused', async (sql) => {
    const err = await denied(sql);
    expect(err.reason).toMatch(/^pragma: /);
  });

  it('harmless PRAGMAs run: table_info of a tenant table, user_version, foreign_keys read', async () => {
    const info = await db.query('PRAGMA table_info(notes)');
    expect(info.rows.map((r) => r.name)).toEqual(['id', 'body']);
    await db.exec('PRAGMA user_version = 7');
    expect((await db.query('PRAGMA user_version')).rows).toEqual([{ user_version: 7 }]);
    expect((await db.query('PRAGMA foreign_keys')).rows).toEqual([{ foreign_keys: 1 }]);
  });
});

describe('the internal tables in every spelling', () => {
  it.each([
    'SELECT * FROM _meta',
    'SELECT * FROM "_META"',
    'SELECT * FROM [_meta]',
    'SELECT * FROM `_Meta`',
    'SELECT * FROM main._meta',
    'SELECT * FROM "main"."_meta"',
    'SELECT version FROM _meta',
    'SELECT (SELECT version FROM _meta) AS v',
    "SELECT * FROM pragma_table_info('_meta')",
  ])('read: %s is refused', async (sql) => {
    await denied(sql, 'query');
  });

  it.each([
    'UPDATE _meta SET version = 0',
    'UPDATE "_META" SET version = 0',
    'DELETE FROM [_meta]',
    'INSERT INTO `_Meta` (id, version) VALUES (2, 0)',
    'DROP TABLE main._meta',
    'ALTER TABLE _meta RENAME TO mine',
    'ALTER TABLE _meta ADD COLUMN x',
    'CREATE INDEX meta_version ON _meta (version)',
    'CREATE TRIGGER on_meta AFTER UPDATE ON _meta BEGIN SELECT 1; END',
    'CREATE TABLE _hp_users (id)',
    'CREATE TABLE "_HP_sessions" (id)',
    'CREATE TABLE _litestream_seq (id)',
    'CREATE VIEW _hp_view AS SELECT 1',
  ])('write: %s is refused', async (sql) => {
    await denied(sql);
  });

  it('renaming a tenant table to a reserved name is refused', async () => {
    await db.exec('CREATE TABLE scratch (a)');
    await refusal(() => db.exec('ALTER TABLE scratch RENAME TO _hp_users'));
    await refusal(() => db.exec('ALTER TABLE scratch RENAME TO "_litestream_lock"'));
    expect((await db.schema()).tables.map((t) => t.name)).toContain('scratch');
    await db.exec('DROP TABLE scratch');
  });

  it('a view over _meta can be created but not read', async () => {
    await db.exec('CREATE VIEW peek AS SELECT * FROM _meta');
    const err = await denied('SELECT * FROM peek', 'query');
    expect(err.reason).toBe('reserved table: _meta');
    await db.exec('DROP VIEW peek');
  });

  it('a cached statement is judged again when the schema under it changes', async () => {
    await db.exec('CREATE VIEW swap AS SELECT 1 AS one');
    expect((await db.query('SELECT * FROM swap')).rows).toEqual([{ one: 1 }]);
    await db.exec('DROP VIEW swap');
    await db.exec('CREATE VIEW swap AS SELECT version AS one FROM _meta');
    // Same SQL text, so the engine's prepared statement; SQLite re-prepares it, in tenant mode.
    await denied('SELECT * FROM swap', 'query');
    await db.exec('DROP VIEW swap');
  });

  it('an FTS5 table with _meta as its external content cannot read it', async () => {
    await db.exec("CREATE VIRTUAL TABLE leak USING fts5(version, content='_meta', content_rowid='id')");
    const err = await refusal(() => db.query("SELECT version FROM leak WHERE leak MATCH 'x' OR rowid = 1"));
    expect(err.message).not.toMatch(/^\d+$/);
    const scan = await refusal(() => db.query('SELECT * FROM leak'));
    expect(['denied', 'sql']).toContain(scan.kind);
    await refusal(() => db.exec("INSERT INTO leak (leak) VALUES ('rebuild')"));
    await db.exec('DROP TABLE leak');
  });

  it('a trigger that writes _meta makes the statement that fires it fail, changing nothing', async () => {
    await db.exec('CREATE TRIGGER sneak AFTER INSERT ON notes BEGIN UPDATE _meta SET version = 0; END');
    const count = (await db.query('SELECT count(*) AS n FROM notes')).rows[0]?.n;
    await denied("INSERT INTO notes (body) VALUES ('x')");
    expect((await db.query('SELECT count(*) AS n FROM notes')).rows[0]?.n).toBe(count);
    await db.exec('DROP TRIGGER sneak');
  });

  it('a trigger that reads _meta is refused as well', async () => {
    await db.exec(
      'CREATE TRIGGER sneak2 AFTER INSERT ON notes BEGIN INSERT INTO notes (body) SELECT version FROM _meta; END',
    );
    await denied("INSERT INTO notes (body) VALUES ('x')");
    await db.exec('DROP TRIGGER sneak2');
  });

  it('schema() hides _meta and SQLite tables', async () => {
    const schema = await db.schema();
    expect(schema.tables.map((t) => t.name)).toEqual(['notes']);
    expect(schema.tables[0]?.sql).toMatch(/^CREATE TABLE notes/);
    expect(schema.tables[0]?.columns.map((c) => c.name)).toEqual(['id', 'body']);
  });
});

describe('virtual tables outside the allowlist (FTS5, R*Tree, json_each/json_tree, allowed PRAGMAs)', () => {
  const ALLOWED_MODULES = ['fts5', 'fts5vocab', 'rtree', 'rtree_i32'];
  // Ask this build of SQLite, without the guard, which modules it has and which answer by name alone.
  function modulesOfThisBuild(): { all: string[]; eponymous: string[] } {
    const bare = new Database(':memory:', { nativeBinding: native.binding });
    try {
      const all = (bare.prepare('SELECT name FROM pragma_module_list').pluck().all() as string[]).filter(
        (m) => !m.startsWith('pragma_'),
      );
      const eponymous = all.filter((m) => {
        try {
          bare.prepare(`SELECT * FROM "${m}"`);
          return true;
        } catch {
          return false;
        }
      });
      return { all, eponymous };
    } finally {
      bare.close();
    }
  }

  it('every eponymous module of this build is refused by the guard, in every form', async () => {
    const { eponymous } = modulesOfThisBuild();
    const refused = eponymous.filter((m) => !ALLOWED_MODULES.includes(m));
    expect(refused).toEqual(expect.arrayContaining(['dbstat', 'fts3tokenize'])); // this build's; the guard asks SQLite
    for (const module of refused) {
      for (const sql of [
        `SELECT * FROM ${module}`,
        `SELECT count(*) FROM ${module}`,
        `SELECT * FROM main.${module}`,
        `SELECT count(*) FROM temp.${module}`,
        `SELECT * FROM "${module.toUpperCase()}"`,
        `SELECT (SELECT count(*) FROM ${module}) AS n`,
        `WITH c AS (SELECT * FROM ${module}) SELECT * FROM c`,
      ]) {
        const err = await denied(sql, 'query');
        expect(err.reason, sql).toBe(`virtual table module: ${module}`);
        expect(err.sqliteCode).toBe('SQLITE_AUTH');
      }
      // A read-only module: SQLite says so before the authorizer is asked; refused either way.
      await refusal(() => db.exec(`DELETE FROM ${module}`));
    }
  });

  it('dbstat shows nothing of _meta, directly or through a view or a trigger', async () => {
    const direct = await denied("SELECT pageno FROM dbstat WHERE name = '_meta'", 'query');
    expect(direct.message).toMatch(/virtual table module: dbstat/);
    await denied("SELECT * FROM dbstat('main') WHERE name = '_meta'", 'query');
    await db.exec('CREATE VIEW pages AS SELECT name, pageno FROM dbstat');
    await refusal(() => db.query('SELECT * FROM pages'));
    await db.exec('DROP VIEW pages');
    await db.exec(
      "CREATE TRIGGER pages AFTER INSERT ON notes BEGIN INSERT INTO notes (body) SELECT pageno FROM dbstat WHERE name = '_meta'; END",
    );
    await refusal(() => db.exec("INSERT INTO notes (body) VALUES ('x')"));
    await db.exec('DROP TRIGGER pages');
  });

  it('no module outside the allowlist can be created, and the rest are not there by name', async () => {
    const { all } = modulesOfThisBuild();
    for (const module of all.filter((m) => !ALLOWED_MODULES.includes(m))) {
      const err = await denied(`CREATE VIRTUAL TABLE mine USING ${module}(a)`);
      expect(err.reason).toBe(`virtual table module: ${module}`);
    }
    // Not compiled into this build, or not eponymous: refused whatever the guard would say.
    for (const name of [
      'sqlite_dbpage',
      'sqlite_stmt',
      'bytecode',
      'tables_used',
      'generate_series',
      'carray',
      'fts5vocab',
      'fts4aux',
      'geopoly',
      'pragma_module_list',
      'pragma_compile_options',
      'pragma_database_list',
    ]) {
      const err = await refusal(() => db.query(`SELECT * FROM ${name}`));
      expect(['sql', 'denied'], `${name}: ${err.message}`).toContain(err.kind);
    }
  });

  it('the allowed ones still answer: json_each/json_tree, allowed PRAGMAs, FTS5 and R*Tree tables, fts5vocab', async () => {
    expect((await db.query("SELECT value FROM json_each('[1,2]')")).rows).toEqual([
      { value: 1 },
      { value: 2 },
    ]);
    expect((await db.query('SELECT count(*) AS n FROM json_tree(\'{"a":[1]}\')')).rows).toEqual([{ n: 3 }]);
    expect((await db.query("SELECT count(*) AS n FROM jsonb_each('[1,2,3]')")).rows).toEqual([{ n: 3 }]);
    expect((await db.query("SELECT name FROM pragma_table_info('notes')")).rows).toEqual([
      { name: 'id' },
      { name: 'body' },
    ]);
    expect((await db.query('SELECT user_version FROM pragma_user_version')).rows).toHaveLength(1);
    await db.exec('CREATE VIRTUAL TABLE docs USING fts5(body)');
    await db.exec("INSERT INTO docs VALUES ('hello world')");
    await db.exec('CREATE VIRTUAL TABLE docs_terms USING fts5vocab(docs, row)');
    expect((await db.query('SELECT term FROM docs_terms ORDER BY term')).rows).toEqual([
      { term: 'hello' },
      { term: 'world' },
    ]);
    await db.exec('CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1)');
    await db.exec('INSERT INTO boxes VALUES (1, 0, 10)');
    expect((await db.query('SELECT id FROM boxes WHERE x0 <= 5 AND x1 >= 5')).rows).toEqual([{ id: 1 }]);
    for (const sql of ['DROP TABLE docs_terms', 'DROP TABLE docs', 'DROP TABLE boxes']) await db.exec(sql);
  });

  it('a refused module’s name is never a tenant table: no table or view of that name, and no way around the refusal through one', async () => {
    for (const sql of [
      'CREATE TABLE dbstat (x)',
      'CREATE TABLE DBSTAT (x)',
      'CREATE VIEW dbstat AS SELECT 1 AS x',
    ]) {
      expect((await denied(sql)).reason).toMatch(/^virtual table module name: dbstat$/i);
    }
    // Renamed into the name (the authorizer does not see the new name): still refused when read,
    // also as temp.dbstat, which SQLite resolves to the eponymous table filed under "main".
    await db.exec('CREATE TABLE mine (x)');
    await db.exec('ALTER TABLE mine RENAME TO dbstat');
    for (const sql of [
      "SELECT pageno FROM temp.dbstat WHERE name = '_meta'",
      'SELECT x FROM main.dbstat',
      'SELECT * FROM dbstat',
    ]) {
      expect((await denied(sql, 'query')).message).toMatch(/virtual table module: dbstat/);
    }
    // Renamed away, it is the tenant's again.
    await db.exec('ALTER TABLE dbstat RENAME TO mine');
    await db.exec('DROP TABLE mine');
  });
});

describe('transactions and statements', () => {
  it.each(['BEGIN', 'BEGIN IMMEDIATE', 'COMMIT', 'ROLLBACK', 'SAVEPOINT sp', 'RELEASE sp', 'END'])(
    '%s is refused',
    async (sql) => {
      const err = await denied(sql);
      expect(err.reason).toBe('transaction control');
    },
  );

  it('two statements in one call are refused, and neither runs', async () => {
    const err = await refusal(() => db.exec("INSERT INTO notes (body) VALUES ('a'); DELETE FROM notes"));
    expect(err.kind).toBe('statement');
    expect(err.message).toMatch(/more than one statement/);
    expect((await db.query('SELECT count(*) AS n FROM notes')).rows[0]?.n).toBeGreaterThan(0);
  });

  it('temp objects are refused', async () => {
    await denied('CREATE TEMP TABLE t (a)');
  });

  it('functions outside the allowlist are refused (sqlite_version, the guard control)', async () => {
    await denied('SELECT sqlite_version()', 'query');
    await denied('SELECT sqlite_compileoption_get(0)', 'query');
    const init = await refusal(() => db.query("SELECT _hp_guard('init')"));
    expect(init.message).toMatch(/not authorized/);
    const forged = await refusal(() => db.query(`SELECT _hp_guard('${'0'.repeat(64)}', 'engine')`));
    expect(forged.message).toMatch(/not authorized/);
  });
});

describe('the deadline', () => {
  it('stops an endless recursive CTE written without RECURSIVE, and the database stays usable', async () => {
    const started = performance.now();
    const err = await refusal(() =>
      db.query('WITH c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c'),
    );
    const took = performance.now() - started;
    expect(err.kind).toBe('timeout');
    expect(took).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
    expect(took).toBeLessThan(DEADLINE_MS + 1_500);
    expect((await db.query('SELECT body FROM notes ORDER BY id LIMIT 1')).rows).toEqual([{ body: 'hello' }]);
  });

  it('holds for a statement the engine has cached: each run gets its own deadline', async () => {
    const endless = 'WITH c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c';
    for (let run = 0; run < 2; run++) {
      const started = performance.now();
      expect((await refusal(() => db.query(endless))).kind).toBe('timeout');
      expect(performance.now() - started).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
    }
  });

  it('bounds a whole batch: statements share what is left of its deadline', async () => {
    const own = new SqlitePool({ size: 1, limits: { statementTimeoutMs: 1_000, batchTimeoutMs: 500 } });
    try {
      const other = await own.open(path.join(dir, 'batch.sqlite'), { maxBytes: null });
      await other.exec('CREATE TABLE t (x)');
      // Each statement runs ~150-300 ms, well within its own 1 s deadline; the batch's 500 ms ends it.
      const slow =
        'INSERT INTO t SELECT count(*) FROM (WITH c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT ?)';
      let rows = 1_000;
      for (let took = 0; took < 150; rows *= 2) {
        const started = performance.now();
        await other.query(
          'SELECT count(*) FROM (WITH c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT ?)',
          [rows],
        );
        took = performance.now() - started;
      }
      const started = performance.now();
      const err = await other
        .batch(Array.from({ length: 30 }, () => ({ sql: slow, params: [rows / 2] })))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toMatchObject({ kind: 'timeout' });
      // Unbounded, the 30 statements would run ~6 s; bounded, the batch stops near 500 ms (slack for a loaded machine).
      expect(performance.now() - started).toBeLessThan(2_000);
      expect((await other.query('SELECT count(*) AS n FROM t')).rows).toEqual([{ n: 0 }]);
    } finally {
      await own.close();
    }
  });

  it('stops an endless write and rolls it back', async () => {
    const before = (await db.query('SELECT count(*) AS n FROM notes')).rows[0]?.n;
    const err = await refusal(() =>
      db.exec(
        'INSERT INTO notes (body) WITH c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c',
      ),
    );
    expect(err.kind).toBe('timeout');
    expect((await db.query('SELECT count(*) AS n FROM notes')).rows[0]?.n).toBe(before);
    await db.exec("INSERT INTO notes (body) VALUES ('after')");
  });
});
