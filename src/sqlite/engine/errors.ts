/**
 * The engine's typed failures. The engine knows nothing of HTTP: the SQLite domain maps each kind
 * to a registry code (`sql`, `denied`, `statement` and `timeout` → 400 "SQL error"; `size` → 413
 * "SQLite size limit exceeded"; `busy` → 429, `overloaded`, `closed` and `storage` → 503, with Retry-After;
 * `internal` → 500).
 */
export type SqliteEngineErrorKind =
  /** SQLite refused or failed the statement (syntax, constraint, no such table, …). */
  | 'sql'
  /** The guard's authorizer refused it (a reserved table, a PRAGMA, a function, ATTACH, BEGIN, …). */
  | 'denied'
  /** An engine rule: two statements, a write sent to query, a read sent to exec, bad parameters. */
  | 'statement'
  /** The statement ran past its deadline and was interrupted (its changes rolled back). */
  | 'timeout'
  /** The database is over its size cap (`applied` says whether this write went in first). */
  | 'size'
  /** The database already has its most calls waiting (a queue bound): try again later. */
  | 'busy'
  /** Its worker already has its most calls waiting, all databases together: try again later. */
  | 'overloaded'
  /** The database handle or the pool was closed (or its worker died). */
  | 'closed'
  /** The server's disk is full (SQLITE_FULL not caused by the size cap): nothing was written. */
  | 'storage'
  /** A bug or an environment failure (the native build missing, a worker crash). */
  | 'internal';

/** Plain data, as it crosses the worker boundary. */
export interface SqliteEngineErrorData {
  kind: SqliteEngineErrorKind;
  message: string;
  /** SQLite's extended result code name, e.g. SQLITE_CONSTRAINT_UNIQUE, SQLITE_AUTH. */
  sqliteCode?: string;
  /** In a batch: the index of the statement that failed. */
  index?: number;
  /** `denied`: what the guard refused, e.g. "pragma: journal_mode" (bounded: for metric labels use `reasonClass`). */
  reason?: string;
  /** `size`: the measured size and the cap, in bytes. */
  sizeBytes?: number;
  limitBytes?: number;
  /** `size`: true when this write was applied (it crossed the cap), false when it was refused. */
  applied?: boolean;
  /** The database version after the call (set when known, e.g. on an applied `size` error). */
  version?: number;
  /** `busy`, `overloaded`: when a new attempt may succeed. */
  retryAfterSeconds?: number;
}

export class SqliteEngineError extends Error {
  readonly kind: SqliteEngineErrorKind;
  readonly sqliteCode: string | undefined;
  readonly index: number | undefined;
  readonly reason: string | undefined;
  readonly sizeBytes: number | undefined;
  readonly limitBytes: number | undefined;
  readonly applied: boolean | undefined;
  readonly version: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(data: SqliteEngineErrorData) {
    super(data.message);
    this.name = 'SqliteEngineError';
    this.kind = data.kind;
    this.sqliteCode = data.sqliteCode;
    this.index = data.index;
    this.reason = data.reason;
    this.sizeBytes = data.sizeBytes;
    this.limitBytes = data.limitBytes;
    this.applied = data.applied;
    this.version = data.version;
    this.retryAfterSeconds = data.retryAfterSeconds;
  }

  /** A bounded label for metrics: the first word of the guard's reason ("pragma", "function", …). */
  get reasonClass(): string | undefined {
    return this.reason?.split(':')[0];
  }

  toData(): SqliteEngineErrorData {
    const data: SqliteEngineErrorData = { kind: this.kind, message: this.message };
    for (const key of [
      'sqliteCode',
      'index',
      'reason',
      'sizeBytes',
      'limitBytes',
      'applied',
      'version',
      'retryAfterSeconds',
    ] as const) {
      if (this[key] !== undefined) (data as unknown as Record<string, unknown>)[key] = this[key];
    }
    return data;
  }
}

export function isSqliteEngineError(err: unknown): err is SqliteEngineError {
  return err instanceof SqliteEngineError;
}
