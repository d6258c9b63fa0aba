import Database from 'better-sqlite3';
import { cellBytes, encodeCell, type SqlValue } from './encoding.js';
import { SqliteEngineError } from './errors.js';
import type { EngineLimits } from './types.js';

// How a query's rows are read within the answer's caps (issue 16: one wide row of large values
// made a 480 MB answer). The bound holds while SQLite builds a row, not only between rows: each
// value a query makes or reads is capped by SQLITE_LIMIT_LENGTH (set by the guard per statement)
// at `valueCap`, so no row can be larger than the answer may be.

/**
 * The most bytes of one value a statement may make or read: maxValueBytes, and for a query the
 * response cap shared by its columns too.
 */
export function valueCap(limits: EngineLimits, columns: number, isQuery: boolean): number {
  const widest = limits.maxValueBytes;
  if (!isQuery || columns === 0) return widest;
  return Math.max(1024, Math.min(widest, Math.floor(limits.maxResultBytes / columns)));
}

/**
 * Reads rows up to the caps: the row that would take the answer past maxRows or maxResultBytes
 * ends it (`truncated`), and so does a value over the cap after the first row; a first row with
 * one is refused (400, SQLITE_TOOBIG, naming the cap). Other failures are thrown as they come.
 */
export function readRows(
  iterator: IterableIterator<unknown[]>,
  columns: string[],
  limits: EngineLimits,
): { rows: Record<string, SqlValue>[]; truncated: boolean } {
  const rows: Record<string, SqlValue>[] = [];
  let bytes = 0;
  try {
    for (const raw of iterator) {
      if (rows.length >= limits.maxRows) {
        iterator.return?.();
        return { rows, truncated: true };
      }
      let rowBytes = 0;
      const row: Record<string, SqlValue> = {};
      for (let i = 0; i < columns.length; i++) {
        const cell = encodeCell(raw[i]);
        row[columns[i] as string] = cell;
        rowBytes += cellBytes(cell) + (columns[i] as string).length + 4;
      }
      // SQLite's cap counts raw bytes; the answer counts JSON (escapes, base64), which can be up to
      // six times more: a first row over the cap on its own is refused, never answered.
      if (bytes + rowBytes > limits.maxResultBytes) {
        iterator.return?.();
        if (rows.length > 0) return { rows, truncated: true };
        throw tooBig(limits, columns.length);
      }
      bytes += rowBytes;
      rows.push(row);
    }
  } catch (err) {
    if (!(err instanceof Database.SqliteError && err.code === 'SQLITE_TOOBIG')) throw err;
    if (rows.length > 0) return { rows, truncated: true };
    throw tooBig(limits, columns.length);
  }
  return { rows, truncated: false };
}

function tooBig(limits: EngineLimits, columns: number): SqliteEngineError {
  const cap = valueCap(limits, columns, true);
  return new SqliteEngineError({
    kind: 'sql',
    message:
      `A value or row this query makes or reads is over its cap (${cap} bytes a value or sorted row: ` +
      `${limits.maxValueBytes} bytes, and a ${limits.maxResultBytes}-byte answer in JSON shared by its ` +
      `${columns} columns): select fewer columns or shorter values`,
    sqliteCode: 'SQLITE_TOOBIG',
  });
}
