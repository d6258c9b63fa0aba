import Database from 'better-sqlite3';
import { type BindValue, decodeParams, type SqlValue } from './encoding.js';
import { ReservedNames } from './reserved-names.js';
import { prepareEngineStatements, type EngineStatements } from './engine-statements.js';
import { SqliteEngineError } from './errors.js';
import { readRows, valueCap } from './rows.js';
import { readSchema } from './schema.js';
import { NO_ROWID } from './rowids.js';
import type { NativeParts } from '../../config/index.js';
import type {
  EngineLimits,
  OpenOptions,
  QueryResult,
  SchemaResult,
  VacuumResult,
  WriteOutcome,
} from './types.js';

type Db = Database.Database;
type Stmt = Database.Statement<BindValue[]>;
/** A prepared tenant statement and its result columns (none for a statement without rows). */
interface Prepared {
  stmt: Stmt;
  columns: string[];
}

/** Prepared tenant statements kept per database, by SQL text. */
const STATEMENT_CACHE = 100;

/**
 * One guarded SQLite database, inside a worker thread. Every tenant statement is prepared and run
 * in the guard's tenant mode (authorizer on, deadline set); the engine's own statements (BEGIN,
 * COMMIT, the version bump, size measurement) in engine mode, switched through `_hp_guard` with
 * the secret only this object knows. WritableDatabase (writes.ts) adds exec and batch on top,
 * GroupCommitDatabase (group-commit.ts) group commit.
 */
export class GuardedDatabase {
  protected readonly db: Db;
  private readonly secret: string;
  protected readonly internal: EngineStatements;
  private readonly pageSize: number;
  protected maxBytes: number | null;
  protected version = 0;
  protected sizeBytes = 0;
  /** Objects with reserved names, all the platform's: a tenant write that adds one is undone. */
  protected readonly reserved: ReservedNames;
  protected readonly statements = new Map<string, Prepared>();

  // Plain fields, no parameter properties: the worker runs this file under Node's type stripping.
  readonly filePath: string;
  protected readonly limits: EngineLimits;

  constructor(filePath: string, options: OpenOptions, limits: EngineLimits, native: NativeParts) {
    this.filePath = filePath;
    this.limits = limits;
    this.db = new Database(filePath, { nativeBinding: native.binding, timeout: limits.busyTimeoutMs });
    try {
      this.db.loadExtension(native.guard);
      this.secret = this.db.prepare("SELECT _hp_guard('init')").pluck().get() as string;
      // Still engine mode (the guard starts trusted): the platform's own settings and tables.
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.pragma('foreign_keys = ON');
      this.db.exec(
        'CREATE TABLE IF NOT EXISTS _meta (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);' +
          'INSERT OR IGNORE INTO _meta (id, version) VALUES (1, 0);',
      );
      this.internal = prepareEngineStatements(this.db);
      this.pageSize = this.db.pragma('page_size', { simple: true }) as number;
      this.maxBytes = null;
      this.setMaxBytes(options.maxBytes);
      this.version = this.db.prepare('SELECT version FROM _meta WHERE id = 1').pluck().get() as number;
      this.sizeBytes = this.measure();
      this.reserved = new ReservedNames(this.internal);
    } catch (err) {
      this.db.close();
      throw err;
    }
  }

  /** The size cap (null: none). `max_page_count` sits above it as a backstop (SQLITE_FULL). */
  setMaxBytes(maxBytes: number | null): void {
    this.maxBytes = maxBytes;
    const backstop = maxBytes === null ? 0xfffffffe : maxBytes + Math.max(1 << 20, Math.ceil(maxBytes / 10));
    this.db.pragma(`max_page_count = ${Math.ceil(backstop / this.pageSize)}`);
  }

  get state(): { version: number; sizeBytes: number } {
    return { version: this.version, sizeBytes: this.sizeBytes };
  }

  query(sql: string, params: unknown): QueryResult {
    const values = decodeParams(params);
    const { stmt, columns } = this.prepareTenant(sql, this.limits.statementTimeoutMs, true);
    if (!stmt.reader || !stmt.readonly) {
      this.engineMode();
      throw new SqliteEngineError({
        kind: 'statement',
        message: 'query runs one read-only statement that returns rows; send writes to exec',
      });
    }
    let answer: { rows: Record<string, SqlValue>[]; truncated: boolean };
    try {
      answer = readRows(stmt.iterate(...values) as IterableIterator<unknown[]>, columns, this.limits);
    } catch (err) {
      throw this.tenantError(err);
    } finally {
      this.engineMode();
      // The guard refuses BEGIN/SAVEPOINT, so this never holds; if it ever did, nothing stays open.
      if (this.db.inTransaction) this.internal.rollback.run();
    }
    const { rows, truncated } = answer;
    return { columns, rows, rowCount: rows.length, truncated, version: this.version };
  }

  schema(): SchemaResult {
    return { ...readSchema(this.db), version: this.version };
  }

  vacuum(): VacuumResult {
    // Before and after: the file's pages, free ones included (what VACUUM gives back to the disk);
    // the cap counts used pages only, so DELETE alone already brings a database under it.
    const started = performance.now();
    const sizeBefore = this.allocated();
    this.internal.maintenance.run(this.secret, 1n);
    try {
      this.db.exec('VACUUM');
    } finally {
      this.internal.maintenance.run(this.secret, 0n);
    }
    this.sizeBytes = this.measure();
    return {
      sizeBefore,
      sizeAfter: this.allocated(),
      durationMs: Math.round(performance.now() - started),
      version: this.version,
    };
  }

  /**
   * Sets the change counter (a point-in-time restore: the restored file's counter is older than
   * what clients have seen, and pollers must see a change). In its own transaction, engine mode.
   */
  setVersion(version: number): void {
    this.internal.begin.run();
    try {
      this.db.prepare('UPDATE _meta SET version = ? WHERE id = 1').run(version);
      this.internal.commit.run();
    } catch (err) {
      if (this.db.inTransaction) this.internal.rollback.run();
      throw err;
    }
    this.version = version;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  // --- internals ---------------------------------------------------------------------------------

  /** One tenant write statement (in the caller's transaction), back in engine mode after. */
  protected runWrite(sql: unknown, params: BindValue[], budgetMs: number): WriteOutcome {
    const { stmt } = this.prepareTenant(sql, budgetMs, false);
    // A read that returns rows belongs to query. (Some statements without rows count as
    // read-only for SQLite, e.g. REINDEX or PRAGMA defer_foreign_keys = ON: they run here.)
    if (stmt.reader && stmt.readonly) {
      this.engineMode();
      throw new SqliteEngineError({
        kind: 'statement',
        message: 'exec and batch run write statements; send reads to query',
      });
    }
    const info = this.runTenant(stmt, params);
    return {
      rowsAffected: info.changes,
      lastInsertRowId: info.lastInsertRowid === NO_ROWID ? null : Number(info.lastInsertRowid),
    };
  }

  /**
   * Prepares tenant SQL in tenant mode (the authorizer judges it now), or takes it from the cache:
   * a cached statement was judged in tenant mode too, and when a schema change makes SQLite
   * re-prepare it, that happens while it runs, in tenant mode again. Preparing is most of the cost
   * of a point read (~16 of ~23 µs), hence the cache. Leaves the connection in tenant mode with
   * the deadline and the statement's cap per value set.
   */
  private prepareTenant(sql: unknown, budgetMs: number, isQuery: boolean): Prepared {
    if (typeof sql !== 'string' || sql.trim() === '') {
      throw new SqliteEngineError({ kind: 'statement', message: 'sql must be a non-empty string' });
    }
    const cached = this.statements.get(sql);
    if (cached) {
      this.internal.tenant.run(
        this.secret,
        BigInt(budgetMs),
        BigInt(valueCap(this.limits, cached.columns.length, isQuery)),
      );
      // Most recently used last: the Map's first key is the one to evict.
      this.statements.delete(sql);
      this.statements.set(sql, cached);
      return cached;
    }
    const widest = this.limits.maxValueBytes;
    this.internal.tenant.run(this.secret, BigInt(budgetMs), BigInt(widest));
    let prepared: Prepared;
    try {
      const stmt = this.db.prepare<BindValue[]>(sql);
      // Set once, not per call (~0.5 µs of a point read): rows come as arrays (readRows names them)
      // and integers exact; run() ignores raw, so exec shares the statement. Exact integers matter
      // there too: the guard marks "inserted no row" with NO_ROWID (INT64_MIN), not a double.
      if (stmt.reader) stmt.raw(true);
      stmt.safeIntegers(true);
      prepared = { stmt, columns: stmt.reader ? stmt.columns().map((c) => c.name) : [] };
    } catch (err) {
      const error = this.tenantError(err);
      this.engineMode();
      throw error;
    }
    const cap = valueCap(this.limits, prepared.columns.length, isQuery);
    if (cap !== widest) this.internal.tenant.run(this.secret, BigInt(budgetMs), BigInt(cap));
    this.statements.set(sql, prepared);
    if (this.statements.size > STATEMENT_CACHE)
      this.statements.delete(this.statements.keys().next().value as string);
    return prepared;
  }

  /** Runs a prepared tenant statement (already in tenant mode), then returns to engine mode. */
  private runTenant(stmt: Stmt, params: BindValue[]): Database.RunResult {
    try {
      return stmt.run(...params);
    } catch (err) {
      throw this.tenantError(err);
    } finally {
      this.engineMode();
    }
  }

  protected engineMode(): void {
    this.internal.engine.run(this.secret);
  }

  /** Classifies a failure of tenant SQL (called while still in tenant mode: status is fresh). */
  private tenantError(err: unknown): SqliteEngineError {
    if (err instanceof SqliteEngineError) return err;
    const message = err instanceof Error ? err.message : String(err);
    if (!(err instanceof Database.SqliteError)) {
      // better-sqlite3's own checks: two statements, none, the wrong number of parameters.
      return new SqliteEngineError({ kind: 'statement', message });
    }
    const status = this.internal.status.get(this.secret) as string | null;
    if (status === 'timeout' || err.code === 'SQLITE_INTERRUPT') return this.timeoutError();
    if (status !== null) {
      return new SqliteEngineError({
        kind: 'denied',
        message: `${message} (${status})`,
        sqliteCode: err.code,
        reason: status,
      });
    }
    return new SqliteEngineError({ kind: 'sql', message, sqliteCode: err.code });
  }

  protected timeoutError(ms = this.limits.statementTimeoutMs, what = 'statement'): SqliteEngineError {
    return new SqliteEngineError({
      kind: 'timeout',
      message:
        what === 'batch'
          ? `The batch ran past its ${ms} ms deadline and was rolled back`
          : `The statement ran past its ${ms} ms deadline (or its batch's) and was interrupted`,
      sqliteCode: 'SQLITE_INTERRUPT',
    });
  }

  protected sizeError(
    applied: boolean,
    index?: number,
    sizeBytes = this.sizeBytes,
    version = this.version,
  ): SqliteEngineError {
    return new SqliteEngineError({
      kind: 'size',
      message: applied
        ? `The database is now ${sizeBytes} bytes, over its ${this.maxBytes} byte limit: this write was applied; later writes are refused until DELETE or DROP frees space`
        : `The database is ${sizeBytes} bytes, over its ${this.maxBytes} byte limit: only DELETE and DROP statements run until space is freed`,
      sizeBytes,
      limitBytes: this.maxBytes ?? undefined,
      applied,
      version,
      index,
    });
  }

  private allocated(): number {
    return Number(this.internal.pages.get()) * this.pageSize;
  }

  /** Bytes in use: (page_count − freelist_count) × page_size. */
  protected measure(): number {
    return (Number(this.internal.pages.get()) - Number(this.internal.free.get())) * this.pageSize;
  }
}
