import type Database from 'better-sqlite3';
import type { SchemaResult } from './types.js';

/** Never shown: the guard's reserved names and SQLite's own tables. */
const HIDDEN = /^(_meta$|_hp_|_litestream_|sqlite_)/i;

interface SchemaRow {
  type: string;
  name: string;
  tableName: string;
  sql: string | null;
}

interface ColumnRow {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
}

/**
 * The tenant's schema (run by the engine in its own mode): tables with their CREATE text, columns
 * and indexes, then views and triggers. Internal tables, SQLite's tables and the shadow tables of
 * virtual tables (FTS5's `<name>_data`, …) are left out.
 */
export function readSchema(db: Database.Database): Omit<SchemaResult, 'version'> {
  const shadow = new Set(
    (
      db.prepare("SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow'").all() as {
        name: string;
      }[]
    ).map((r) => r.name),
  );
  const visible = (
    db
      .prepare('SELECT type, name, tbl_name AS tableName, sql FROM sqlite_schema ORDER BY type, name')
      .all() as SchemaRow[]
  ).filter((o) => !HIDDEN.test(o.name) && !HIDDEN.test(o.tableName) && !shadow.has(o.tableName));
  const columnsOf = db.prepare('SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)');
  const tables = visible
    .filter((o) => o.type === 'table')
    .map((t) => ({
      name: t.name,
      sql: t.sql ?? '',
      columns: (columnsOf.all(t.name) as ColumnRow[]).map((c) => ({
        name: c.name,
        type: c.type,
        notNull: c.notnull === 1,
        defaultValue: c.dflt_value,
        primaryKey: c.pk > 0,
      })),
      indexes: visible
        .filter((o) => o.type === 'index' && o.tableName === t.name && o.sql !== null)
        .map((i) => ({ name: i.name, sql: i.sql as string })),
    }));
  const others = (type: string) =>
    visible
      .filter((o) => o.type === type)
      .map((o) => ({ name: o.name, tableName: o.tableName, sql: o.sql ?? '' }));
  return { tables, views: others('view'), triggers: others('trigger') };
}
