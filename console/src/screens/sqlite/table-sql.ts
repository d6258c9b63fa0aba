/**
 * The table browser's SQL, built here and nowhere else: every identifier quoted (`quoteIdent`),
 * every value a `?` parameter, a page never more than MAX_PAGE_SIZE rows. A row is named by its
 * rowid, or by its primary key in a table WITHOUT ROWID (or one whose rowid names are all taken
 * by columns); a table with neither is shown, never edited.
 */
import { quoteIdent } from './sqlite-api.js';

export const PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

export interface SchemaColumn {
  name: string;
  type: string;
  notNull: boolean;
  primaryKey: boolean;
  defaultValue?: string | null;
}
export interface SchemaTable {
  name: string;
  sql: string;
  columns: SchemaColumn[];
}

/** How a row is named in UPDATE and DELETE. `key` is the name its value comes back under. */
export type Identity =
  { kind: 'rowid'; ref: string; key: string } | { kind: 'pk'; columns: string[] } | { kind: 'none' };

export type FilterOp = 'contains' | 'eq' | 'ne' | 'lt' | 'gt' | 'null' | 'notnull';
export interface Filter {
  column: string;
  op: FilterOp;
  value: string;
}
export interface Sort {
  column: string;
  dir: 'asc' | 'desc';
}
export interface Statement {
  sql: string;
  params: unknown[];
}

export const FILTER_OPS: Array<[FilterOp, string]> = [
  ['contains', 'contains'],
  ['eq', 'is'],
  ['ne', 'is not'],
  ['lt', 'is less than'],
  ['gt', 'is greater than'],
  ['null', 'is NULL'],
  ['notnull', 'is not NULL'],
];
export const takesValue = (op: FilterOp) => op !== 'null' && op !== 'notnull';

// `) WITHOUT ROWID` (with STRICT before or after it) ends the CREATE TABLE text.
const WITHOUT_ROWID = /\)\s*(?:STRICT\s*,\s*)?WITHOUT\s+ROWID\s*(?:,\s*STRICT\s*)?;?\s*$/i;

export function identityOf(table: SchemaTable): Identity {
  const names = new Set(table.columns.map((c) => c.name.toLowerCase()));
  const pk = table.columns.filter((c) => c.primaryKey).map((c) => c.name);
  if (!WITHOUT_ROWID.test(table.sql)) {
    const ref = ['rowid', '_rowid_', 'oid'].find((name) => !names.has(name));
    if (ref) {
      let key = '__rowid';
      for (let n = 2; names.has(key.toLowerCase()); n++) key = `__rowid_${n}`;
      return { kind: 'rowid', ref, key };
    }
  }
  return pk.length > 0 ? { kind: 'pk', columns: pk } : { kind: 'none' };
}

/** LIKE's own characters taken literally (with ESCAPE '\'). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** The filter as SQL: its value a parameter, compared under the column's affinity (text '3' = 3). */
function where(table: SchemaTable, filter: Filter | undefined): Statement {
  if (!filter || !table.columns.some((c) => c.name === filter.column)) return { sql: '', params: [] };
  const col = quoteIdent(filter.column);
  switch (filter.op) {
    case 'contains':
      return { sql: ` WHERE ${col} LIKE ? ESCAPE '\\'`, params: [`%${likeLiteral(filter.value)}%`] };
    case 'eq':
      return { sql: ` WHERE ${col} = ?`, params: [filter.value] };
    case 'ne':
      return { sql: ` WHERE (${col} IS NULL OR ${col} <> ?)`, params: [filter.value] };
    case 'lt':
      return { sql: ` WHERE ${col} < ?`, params: [filter.value] };
    case 'gt':
      return { sql: ` WHERE ${col} > ?`, params: [filter.value] };
    case 'null':
      return { sql: ` WHERE ${col} IS NULL`, params: [] };
    case 'notnull':
      return { sql: ` WHERE ${col} IS NOT NULL`, params: [] };
  }
}

const order = (identity: Identity): string[] =>
  identity.kind === 'rowid'
    ? [quoteIdent(identity.ref)]
    : identity.kind === 'pk'
      ? identity.columns.map(quoteIdent)
      : [];

export function countRows(table: SchemaTable, filter?: Filter): Statement {
  const w = where(table, filter);
  return { sql: `SELECT count(*) AS n FROM ${quoteIdent(table.name)}${w.sql}`, params: w.params };
}

/** One page: the rowid under its own name first (when rows are named by it), then every column. */
export function selectPage(
  table: SchemaTable,
  identity: Identity,
  options: { filter?: Filter; sort?: Sort; page: number; pageSize?: number },
): Statement {
  const size = Math.max(1, Math.min(MAX_PAGE_SIZE, Math.floor(options.pageSize ?? PAGE_SIZE)));
  const page = Math.max(0, Math.floor(options.page));
  const w = where(table, options.filter);
  const keys =
    identity.kind === 'rowid' ? `${quoteIdent(identity.ref)} AS ${quoteIdent(identity.key)}, ` : '';
  const sort =
    options.sort && table.columns.some((c) => c.name === options.sort!.column)
      ? [`${quoteIdent(options.sort.column)} ${options.sort.dir === 'desc' ? 'DESC' : 'ASC'}`]
      : [];
  const by = [...sort, ...order(identity)];
  return {
    sql:
      `SELECT ${keys}* FROM ${quoteIdent(table.name)}${w.sql}` +
      `${by.length ? ` ORDER BY ${by.join(', ')}` : ''} LIMIT ? OFFSET ?`,
    params: [...w.params, size, page * size],
  };
}

/** The values that name `row` (as the API gave them: tagged big integers go back as they came). */
export function keyOf(identity: Identity, row: Record<string, unknown>): unknown[] {
  if (identity.kind === 'rowid') return [row[identity.key]];
  if (identity.kind === 'pk') return identity.columns.map((c) => row[c]);
  return [];
}

function matchRow(identity: Identity, key: unknown[]): Statement {
  if (identity.kind === 'rowid') return { sql: `${quoteIdent(identity.ref)} = ?`, params: key };
  if (identity.kind === 'pk')
    return { sql: identity.columns.map((c) => `${quoteIdent(c)} IS ?`).join(' AND '), params: key };
  throw new Error('The rows of this table cannot be told apart: it has no rowid and no primary key.');
}

export function insertRow(table: SchemaTable, values: Record<string, unknown>): Statement {
  const names = Object.keys(values);
  if (names.length === 0) return { sql: `INSERT INTO ${quoteIdent(table.name)} DEFAULT VALUES`, params: [] };
  return {
    sql: `INSERT INTO ${quoteIdent(table.name)} (${names.map(quoteIdent).join(', ')}) VALUES (${names.map(() => '?').join(', ')})`,
    params: names.map((n) => values[n]),
  };
}

export function updateRow(
  table: SchemaTable,
  identity: Identity,
  key: unknown[],
  changes: Record<string, unknown>,
): Statement {
  const names = Object.keys(changes);
  const match = matchRow(identity, key);
  return {
    sql: `UPDATE ${quoteIdent(table.name)} SET ${names.map((n) => `${quoteIdent(n)} = ?`).join(', ')} WHERE ${match.sql}`,
    params: [...names.map((n) => changes[n]), ...match.params],
  };
}

export function deleteRow(table: SchemaTable, identity: Identity, key: unknown[]): Statement {
  const match = matchRow(identity, key);
  return { sql: `DELETE FROM ${quoteIdent(table.name)} WHERE ${match.sql}`, params: match.params };
}

/**
 * What the owner typed, as the parameter to bind: for a column of INTEGER or REAL affinity a
 * number when it reads as one (a big integer tagged, as the API takes it), else the text as is.
 */
export function valueFor(column: SchemaColumn, text: string): unknown {
  const type = column.type.toUpperCase();
  const integer = type.includes('INT');
  const numeric = integer || /REAL|FLOA|DOUB|NUM|DEC/.test(type);
  const trimmed = text.trim();
  if (integer && /^-?\d+$/.test(trimmed)) {
    const n = Number(trimmed);
    return Number.isSafeInteger(n) ? n : { $bigint: trimmed };
  }
  if (numeric && trimmed !== '' && Number.isFinite(Number(trimmed))) return Number(trimmed);
  return text;
}

/** A cell's value as the text an input shows (undefined: not editable here, e.g. a blob). */
export function textOf(value: unknown): string | undefined {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') {
    const tagged = value as Record<string, unknown>;
    if (typeof tagged.$bigint === 'string') return tagged.$bigint;
    if (typeof tagged.$real === 'string') return tagged.$real;
    return undefined;
  }
  return String(value);
}
