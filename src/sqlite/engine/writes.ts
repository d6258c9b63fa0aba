// exec and batch: each call's statements in one IMMEDIATE transaction, apart from the guarded connection.
import Database from 'better-sqlite3';
import { type BindValue, decodeParams } from './encoding.js';
import { diskFullError, diskNearlyFull } from './disk.js';
import { GuardedDatabase } from './connection.js';
import { SqliteEngineError } from './errors.js';
import { autoincrementExhausted, counterError } from './rowids.js';
import { freesSpace } from './statement-kind.js';
import type { BatchResult, ExecResult, StatementInput, WriteOutcome } from './types.js';

/**
 * A batch lets its worker serve other databases (its `between` hook) at most this often (ms): a
 * batch of cheap statements pays one clock read per statement and one hook call per period.
 */
const YIELD_EVERY_MS = 20;

/**
 * A guarded database that writes: exec runs one statement, batch several, each call in one
 * IMMEDIATE transaction that bumps the version and measures the size (the cap's checks).
 */
export class WritableDatabase extends GuardedDatabase {
  exec(sql: string, params: unknown): ExecResult {
    const values = decodeParams(params);
    const [result] = this.write([{ sql, params: values }], false) as [WriteOutcome];
    // exec answers an integer (spec 4.9): 0 when the statement inserted no row.
    return { rowsAffected: result.rowsAffected, lastInsertRowId: result.lastInsertRowId ?? 0, ...this.state };
  }

  /**
   * `between`, when given, runs between two statements once the batch has run YIELD_EVERY_MS since
   * it began or last yielded: the worker serves other databases' calls there (their own
   * connections, their own guard state), and their time does not count against the batch deadline.
   */
  batch(statements: StatementInput[], between?: () => void): BatchResult {
    if (!Array.isArray(statements) || statements.length === 0) {
      throw new SqliteEngineError({ kind: 'statement', message: 'statements must be a non-empty array' });
    }
    if (statements.length > this.limits.maxBatchStatements) {
      throw new SqliteEngineError({
        kind: 'statement',
        message: `A batch holds at most ${this.limits.maxBatchStatements} statements`,
      });
    }
    const decoded = statements.map((s, index) => {
      try {
        return { sql: s?.sql, params: decodeParams(s?.params) };
      } catch (err) {
        throw withIndex(err, index);
      }
    });
    return { results: this.write(decoded, true, between), ...this.state };
  }

  // --- internals ---------------------------------------------------------------------------------

  /** Runs statements in one IMMEDIATE transaction, bumps the version, measures the size. */
  private write(statements: { sql: unknown; params: BindValue[] }[], isBatch: boolean, between?: () => void) {
    const overCap = this.maxBytes !== null && this.sizeBytes > this.maxBytes;
    if (overCap) {
      const blocked = statements.findIndex((s) => !freesSpace(s.sql));
      if (blocked >= 0) throw this.sizeError(false, isBatch ? blocked : undefined);
    }
    const results: WriteOutcome[] = [];
    // Each statement has its deadline, and a batch as a whole at most batchTimeoutMs, so that one
    // batch cannot hold its worker (and the other databases pinned to it) for 500 deadlines.
    let batchEnds = performance.now() + this.limits.batchTimeoutMs;
    let yielded = performance.now();
    let sizeBytes = this.sizeBytes;
    this.internal.begin.run();
    try {
      if (this.reserved.adoptOutsideChanges()) this.statements.clear();
      statements.forEach((s, index) => {
        if (between && index > 0 && performance.now() - yielded >= YIELD_EVERY_MS) {
          // In engine mode, between statements: the next one sets its own deadline again.
          const paused = performance.now();
          between();
          yielded = performance.now();
          batchEnds += yielded - paused;
        }
        try {
          const left = Math.floor(batchEnds - performance.now());
          if (left <= 0) throw this.timeoutError(this.limits.batchTimeoutMs, 'batch');
          results.push(this.runWrite(s.sql, s.params, Math.min(left, this.limits.statementTimeoutMs)));
        } catch (err) {
          this.engineMode();
          throw isBatch ? withIndex(err, index) : err;
        }
      });
      // Engine mode again (runTenant switched back): the counter, in the same transaction.
      if (!this.db.inTransaction)
        throw new SqliteEngineError({ kind: 'internal', message: 'transaction lost' });
      if (this.reserved.checkAfterWrite()) this.statements.clear();
      const version = Number(this.internal.bump.get());
      // The size the commit leaves, read in the transaction (its own pages are counted): outside
      // it, each PRAGMA opened a read transaction of its own, a third of a single-row insert.
      sizeBytes = this.measure();
      this.internal.commit.run();
      this.version = version;
    } catch (err) {
      const full = sqliteFull(err);
      // SQLITE_FULL is also an AUTOINCREMENT counter at its maximum: look before the rollback too
      // (when SQLite kept the transaction, a counter raised earlier in this batch is still there).
      let exhausted = full !== undefined && this.db.inTransaction && autoincrementExhausted(this.db);
      if (this.db.inTransaction) this.internal.rollback.run();
      if (full) {
        this.sizeBytes = this.measure();
        exhausted ||= autoincrementExhausted(this.db);
        if (exhausted) throw counterError(full);
        // max_page_count (the cap's backstop) is what is left, unless the disk itself is full;
        // with no cap there is no backstop to reach.
        if (this.maxBytes === null || diskNearlyFull(this.filePath)) throw diskFullError(full);
        throw this.sizeError(false, full.index);
      }
      throw err;
    }
    this.sizeBytes = sizeBytes;
    if (this.maxBytes !== null && this.sizeBytes > this.maxBytes) throw this.sizeError(true);
    return results;
  }
}

/**
 * SQLITE_FULL (a database at its max_page_count, a full disk or an exhausted counter) as an engine
 * error, or undefined for any other failure. A tenant statement's failure arrives classified; the
 * engine's own COMMIT's (the WAL append, where a full disk usually shows) as SQLite's.
 */
export function sqliteFull(err: unknown): SqliteEngineError | undefined {
  if (err instanceof SqliteEngineError) return err.sqliteCode === 'SQLITE_FULL' ? err : undefined;
  if (err instanceof Database.SqliteError && err.code === 'SQLITE_FULL') {
    return new SqliteEngineError({ kind: 'sql', message: err.message, sqliteCode: err.code });
  }
  return undefined;
}

function withIndex(err: unknown, index: number): unknown {
  if (!(err instanceof SqliteEngineError)) return err;
  const data = err.toData();
  return new SqliteEngineError({ ...data, index, message: `Statement ${index}: ${data.message}` });
}
