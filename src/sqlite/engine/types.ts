import type { SqlValue } from './encoding.js';

/** Caps and timings that hold for every database of a pool. */
export interface EngineLimits {
  /** Per tenant statement: past it the progress handler interrupts the statement. */
  statementTimeoutMs: number;
  /** A whole batch: each statement's deadline is cut to what is left of it. */
  batchTimeoutMs: number;
  /** How long a statement waits for a lock another connection holds (PRAGMA busy_timeout). */
  busyTimeoutMs: number;
  /** Rows per query response; more are cut and `truncated` is set. */
  maxRows: number;
  /** Approximate JSON bytes of the rows per query response; past it rows are cut (`truncated`). */
  maxResultBytes: number;
  /** Statements per batch. */
  maxBatchStatements: number;
  /**
   * Bytes of one value a tenant statement may make or read (SQLITE_LIMIT_LENGTH while it runs; also
   * the most bytes of one stored row). A query shares `maxResultBytes` between its columns too, so
   * one row cannot outgrow the response cap: each value at most min(this, maxResultBytes / columns).
   */
  maxValueBytes: number;
  /** Calls of one database waiting in or for its worker; more are refused (`busy`, 429). */
  maxQueuedPerDatabase: number;
  /** Calls waiting for one worker, all its databases together; more are refused (`overloaded`, 503). */
  maxQueuedPerWorker: number;
}

export const DEFAULT_LIMITS: EngineLimits = {
  statementTimeoutMs: 2_000,
  batchTimeoutMs: 10_000,
  busyTimeoutMs: 5_000,
  maxRows: 10_000,
  maxResultBytes: 8 * 1024 * 1024,
  maxBatchStatements: 500,
  maxValueBytes: 2_000_000,
  maxQueuedPerDatabase: 128,
  maxQueuedPerWorker: 1024,
};

export interface OpenOptions {
  /** The size cap in bytes (the plan's), or null for none. */
  maxBytes: number | null;
}

export interface StatementInput {
  sql: string;
  /** Positional `?` parameters, in the JSON encoding of encoding.ts. */
  params?: unknown[];
}

export interface QueryResult {
  /** Column names in order (a duplicated name appears twice here; in the row objects the last wins). */
  columns: string[];
  /** One object per row, column name → value (encoding.ts). */
  rows: Record<string, SqlValue>[];
  rowCount: number;
  /** True when rows were cut at `maxRows` or `maxResultBytes`. */
  truncated: boolean;
  version: number;
}

/**
 * A query's answer with its rows already as JSON text (the `rows` of QueryResult, serialized by
 * the worker): the main thread writes it into the HTTP answer as it is, instead of receiving the
 * rows as objects (a structured clone) and serializing them again.
 */
export interface QueryJsonResult {
  /** JSON.stringify of QueryResult's `rows` (the column names are not sent: the rows carry them). */
  rowsJson: string;
  rowCount: number;
  truncated: boolean;
  version: number;
}

/** One statement of a batch. */
export interface WriteOutcome {
  rowsAffected: number;
  /** The rowid of the last row this statement inserted; null when it inserted none (an UPDATE, a DELETE, DDL). */
  lastInsertRowId: number | null;
}

export interface ExecResult {
  rowsAffected: number;
  /** The rowid of the last row this statement inserted; 0 when it inserted none (spec 4.9: an integer). */
  lastInsertRowId: number;
  version: number;
  sizeBytes: number;
}

/** One exec call of a group commit (group-commit.ts execGroup), as it came from the pool. */
export interface ExecCall {
  sql: unknown;
  params: unknown;
}

/** What one call of a group commit is answered: its result, or what it throws when alone. */
export type GroupOutcome = { ok: true; value: ExecResult } | { ok: false; error: unknown };

export interface BatchResult {
  results: WriteOutcome[];
  version: number;
  sizeBytes: number;
}

export interface SchemaResult {
  tables: {
    name: string;
    /** The CREATE TABLE text. */
    sql: string;
    columns: {
      name: string;
      type: string;
      notNull: boolean;
      defaultValue: string | null;
      primaryKey: boolean;
    }[];
    indexes: { name: string; sql: string }[];
  }[];
  views: { name: string; tableName: string; sql: string }[];
  triggers: { name: string; tableName: string; sql: string }[];
  version: number;
}

export interface VacuumResult {
  sizeBefore: number;
  sizeAfter: number;
  durationMs: number;
  version: number;
}

export interface VersionResult {
  version: number;
  sizeBytes: number;
}
