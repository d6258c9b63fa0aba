import type Database from 'better-sqlite3';
import { SqliteEngineError } from './errors.js';

/**
 * The last insert rowid the guard leaves after a tenant statement that inserted no row (INT64_MIN;
 * native/sqlite-guard/guard.c, NO_ROWID): each tenant statement starts from it, so an UPDATE does
 * not report the rowid of an earlier INSERT. Only a row inserted with this rowid explicitly reads
 * the same.
 */
export const NO_ROWID = -(2n ** 63n);

const MAX_ROWID = 2n ** 63n - 1n;

/**
 * Whether an AUTOINCREMENT table can take no new row: its sqlite_sequence counter (as SQLite reads
 * it: an integer) or its largest rowid is at the maximum. SQLite then fails the INSERT with
 * SQLITE_FULL, the code it also uses for a database at its max_page_count; this tells the two
 * apart. Run in engine mode, on the rare SQLITE_FULL path only; its cost is one scan of
 * sqlite_sequence (which every AUTOINCREMENT insert pays anyway) and one max(rowid) per table.
 */
export function autoincrementExhausted(db: Database.Database): boolean {
  try {
    return counterAtMax(db);
  } catch {
    return false; // the check is a diagnosis: when it cannot run, the size rule stands
  }
}

function counterAtMax(db: Database.Database): boolean {
  const hasSequence = db
    .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_sequence'")
    .pluck()
    .get();
  if (hasSequence === undefined) return false;
  const atMax = db
    .prepare(`SELECT 1 FROM sqlite_sequence WHERE CAST(seq AS INTEGER) = ${MAX_ROWID} LIMIT 1`)
    .pluck()
    .get();
  if (atMax !== undefined) return true;
  // A counter lowered under a row inserted with the largest rowid: SQLite takes the larger.
  const tables = db
    .prepare(
      "SELECT DISTINCT s.name FROM sqlite_sequence s JOIN sqlite_schema m ON m.type = 'table' AND m.name = s.name AND m.sql NOT LIKE 'CREATE VIRTUAL%' AND m.sql LIKE '%AUTOINCREMENT%'",
    )
    .pluck()
    .all() as string[];
  return tables.some(
    (name) =>
      db
        .prepare(`SELECT max(rowid) FROM "${name.replaceAll('"', '""')}"`)
        .safeIntegers(true)
        .pluck()
        .get() === MAX_ROWID,
  );
}

/** The failure of an INSERT into an exhausted AUTOINCREMENT table: SQLite's text, and the cause it does not name. */
export function counterError(err: SqliteEngineError): SqliteEngineError {
  return new SqliteEngineError({
    ...err.toData(),
    kind: 'sql',
    message: `${err.message} (an AUTOINCREMENT counter is at its maximum, ${MAX_ROWID})`,
  });
}
