// The SQLite engine's public face: a pool of worker threads holding guarded better-sqlite3
// connections (native/sqlite-guard: authorizer, limits, per-statement deadline), the statement
// rules (query reads, exec/batch write in one IMMEDIATE transaction, version bumped with every
// write, size cap), and the lossless JSON encoding of values.
export { SqlitePool, SqliteDatabase, type SqlitePoolOptions, type CallEvent } from './pool.js';
export type { Operation, Timing } from './protocol.js';
export {
  SqliteEngineError,
  isSqliteEngineError,
  type SqliteEngineErrorKind,
  type SqliteEngineErrorData,
} from './errors.js';
export {
  decodeParam,
  decodeParams,
  encodeCell,
  isParamShape,
  type SqlValue,
  type SqlParam,
} from './encoding.js';
export {
  DEFAULT_LIMITS,
  type EngineLimits,
  type OpenOptions,
  type StatementInput,
  type QueryResult,
  type QueryJsonResult,
  type WriteOutcome,
  type ExecResult,
  type BatchResult,
  type SchemaResult,
  type VacuumResult,
  type VersionResult,
} from './types.js';
