import { useEffect, useRef, useState } from 'preact/hooks';
import type { ScreenProps } from '../screen.js';
import { Alert, useAction, useLoad } from '../../ui/kit.js';
import { Cell } from './cells.js';
import { DatabaseFrame } from './frame.js';
import { FilterForm } from './filter-form.js';
import { RowEditor } from './row-editor.js';
import { confirmWrites, databaseCall, type Permissions } from './sqlite-api.js';
import {
  countRows,
  deleteRow,
  identityOf,
  insertRow,
  keyOf,
  PAGE_SIZE,
  selectPage,
  updateRow,
  type Filter,
  type Identity,
  type SchemaTable,
  type Sort,
  type Statement,
} from './table-sql.js';

interface QueryAnswer {
  rows: Array<Record<string, unknown>>;
  rowCount: number;
  version: number;
  truncated?: boolean;
}
interface ExecAnswer {
  rowsAffected: number;
  lastInsertRowId: number | null;
  version: number;
}
type Db = { siteId: number; path: string };

/**
 * A database's tables (from its schema) and their rows, a page at a time, sorted and filtered by
 * the server (SQL with parameters). Reads go with the console's read-only token; with writes
 * allowed (the query console's confirmation) rows are added, edited and deleted with its
 * read-write token.
 */
export function SqliteTableBrowser({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const path = params.db!;
  const db = { siteId, path };
  const schema = useLoad(
    () =>
      databaseCall<{ tables: SchemaTable[] }>({ ...db, mode: 'read' }, 'GET', '/api/v1/sqlite/schema').then(
        (r) => r.tables,
      ),
    [siteId, path],
  );
  const [selected, setSelected] = useState<string>();
  const [mode, setMode] = useState<Permissions>('read');
  const tables = schema.data ?? [];
  const table = tables.find((t) => t.name === selected) ?? tables[0];
  const writing = mode === 'readwrite';

  return (
    <DatabaseFrame siteId={params.siteId!} path={path} title="Tables">
      <Alert error={schema.error} />
      {schema.data && tables.length === 0 && (
        <p>This database has no table yet. Create one in the query console (switch it to write first).</p>
      )}
      {tables.length > 0 && (
        <>
          <label class="check">
            <input
              id="allow-writes"
              type="checkbox"
              checked={writing}
              onChange={(e) => {
                const write = e.currentTarget.checked && confirmWrites(path);
                e.currentTarget.checked = write;
                setMode(write ? 'readwrite' : 'read');
              }}
            />{' '}
            Allow writes to this database
          </label>
          <div class="browser">
            <nav aria-label="Tables" class="table-list">
              <ul>
                {tables.map((t) => (
                  <li key={t.name}>
                    <button
                      type="button"
                      class="link"
                      aria-current={t.name === table?.name ? 'true' : undefined}
                      onClick={() => setSelected(t.name)}
                    >
                      {t.name}
                    </button>
                  </li>
                ))}
              </ul>
            </nav>
            {table && <TableRows key={table.name} db={db} table={table} writing={writing} />}
          </div>
        </>
      )}
    </DatabaseFrame>
  );
}

function TableRows({ db, table, writing }: { db: Db; table: SchemaTable; writing: boolean }) {
  const identity = identityOf(table);
  const [page, setPage] = useState(0);
  const [sort, setSort] = useState<Sort>();
  const [filter, setFilter] = useState<Filter>();
  const [editing, setEditing] = useState<{ row?: Record<string, unknown> }>();
  const [done, setDone] = useState<string>();
  const write = useAction();
  const read = (statement: Statement) =>
    databaseCall<QueryAnswer>({ ...db, mode: 'read' }, 'POST', '/api/v1/sqlite/query', { json: statement });
  const count = useLoad(
    () => read(countRows(table, filter)).then((r) => Number(r.rows[0]?.n ?? 0)),
    [table.name, filter],
  );
  const rows = useLoad(
    () => read(selectPage(table, identity, { filter, sort, page })),
    [table.name, page, sort, filter],
  );
  const heading = useRef<HTMLHeadingElement>(null);
  const moved = useRef(false);
  useEffect(() => {
    // After a page change, focus goes to what changed (the rows' heading), not back to the top.
    if (moved.current && !rows.loading) heading.current?.focus();
  }, [rows.loading, page]);
  useEffect(() => {
    if (!writing) setEditing(undefined);
  }, [writing]);
  const total = count.data;
  const pages = total === undefined ? undefined : Math.max(1, Math.ceil(total / PAGE_SIZE));
  const first = page * PAGE_SIZE + 1;
  const last = page * PAGE_SIZE + (rows.data?.rows.length ?? 0);
  const go = (to: number) => {
    moved.current = true;
    setPage(to);
  };
  const sortBy = (column: string) => {
    setSort((old) => ({ column, dir: old?.column === column && old.dir === 'asc' ? 'desc' : 'asc' }));
    setPage(0);
  };

  const exec = async (statement: Statement, success: (answer: ExecAnswer) => string) => {
    setDone(undefined);
    const answer = await write.run(async () => {
      const r = await databaseCall<ExecAnswer>({ ...db, mode: 'readwrite' }, 'POST', '/api/v1/sqlite/exec', {
        json: statement,
      });
      if (r.rowsAffected === 0)
        throw new Error(
          'No row was changed: it may have been changed or deleted meanwhile. The rows are read again.',
        );
      return r;
    });
    await Promise.all([rows.reload(), count.reload()]);
    if (!answer) return false;
    setDone(success(answer));
    return true;
  };
  const save = async (values: Record<string, unknown>) => {
    const row = editing?.row;
    if (row && Object.keys(values).length === 0) {
      setEditing(undefined);
      setDone('Nothing was changed.');
      return;
    }
    const ok = row
      ? await exec(updateRow(table, identity, keyOf(identity, row), values), () => 'Row saved.')
      : await exec(insertRow(table, values), (r) =>
          r.lastInsertRowId !== null && identity.kind === 'rowid'
            ? `Row added (rowid ${r.lastInsertRowId}).`
            : 'Row added.',
        );
    if (ok) setEditing(undefined);
  };
  const remove = async (row: Record<string, unknown>, label: string) => {
    if (!confirm(`Delete ${label} of ${table.name}? This cannot be undone.`)) return;
    await exec(deleteRow(table, identity, keyOf(identity, row)), () => `${capitalize(label)} deleted.`);
  };
  const canEdit = writing && identity.kind !== 'none';

  return (
    <section class="stack table-rows" aria-labelledby="rows-title">
      <h2 id="rows-title" tabIndex={-1} ref={heading}>
        {table.name}
      </h2>
      <details>
        <summary>CREATE TABLE statement</summary>
        <pre class="sql-source">{table.sql}</pre>
      </details>
      <FilterForm
        table={table}
        filter={filter}
        onFilter={(next) => {
          setFilter(next);
          setPage(0);
        }}
      />
      {writing && identity.kind === 'none' && (
        <p class="alert alert-info" role="status">
          The rows of this table cannot be told apart (no rowid, no primary key): change them in the query
          console.
        </p>
      )}
      <Alert error={rows.error ?? count.error} />
      <Alert error={done} kind="success" />
      {!editing && <Alert error={write.error} />}
      {canEdit && !editing && (
        <div>
          <button type="button" onClick={() => setEditing({})}>
            Add a row
          </button>
        </div>
      )}
      {canEdit && editing && (
        <RowEditor
          key={editing.row ? JSON.stringify(keyOf(identity, editing.row)) : 'new'}
          table={table}
          row={editing.row}
          title={editing.row ? `Edit ${rowLabel(identity, editing.row)}` : `Add a row to ${table.name}`}
          busy={write.busy}
          error={write.error}
          onSave={(values) => void save(values)}
          onCancel={() => {
            setEditing(undefined);
            write.setError(undefined);
          }}
        />
      )}
      <p role="status" class="page-status">
        {rows.loading
          ? 'Loading rows…'
          : total === 0
            ? filter
              ? 'No row matches the filter.'
              : 'No rows.'
            : `Rows ${first}–${last}${total === undefined ? '' : ` of ${total}`}${pages ? ` · page ${page + 1} of ${pages}` : ''}`}
      </p>
      {rows.data && (
        <div class="table-wrap" tabIndex={0} role="region" aria-label={`Rows of ${table.name}`}>
          <table class="sql-rows">
            <caption class="visually-hidden">
              Rows of {table.name}, page {page + 1}
              {sort ? `, sorted by ${sort.column} ${sort.dir === 'asc' ? 'ascending' : 'descending'}` : ''}
            </caption>
            <thead>
              <tr>
                {table.columns.map((c) => (
                  <th
                    key={c.name}
                    scope="col"
                    aria-sort={
                      sort?.column === c.name ? (sort.dir === 'asc' ? 'ascending' : 'descending') : undefined
                    }
                  >
                    <button type="button" class="sort" onClick={() => sortBy(c.name)}>
                      {c.name}
                    </button>
                  </th>
                ))}
                {canEdit && (
                  <th scope="col" class="row-actions">
                    <span class="visually-hidden">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {rows.data.rows.map((row, i) => {
                const label = rowLabel(identity, row);
                return (
                  <tr key={i}>
                    {table.columns.map((c) => (
                      <td key={c.name}>
                        <Cell value={row[c.name]} />
                      </td>
                    ))}
                    {canEdit && (
                      <td class="row-actions">
                        <div class="actions">
                          <button
                            type="button"
                            class="secondary"
                            aria-label={`Edit ${label}`}
                            onClick={() => {
                              setDone(undefined);
                              setEditing({ row });
                            }}
                          >
                            Edit
                          </button>
                          <button
                            type="button"
                            class="danger"
                            aria-label={`Delete ${label}`}
                            aria-disabled={write.busy}
                            onClick={() => void remove(row, label)}
                          >
                            Delete
                          </button>
                        </div>
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <div class="row pager">
        <button
          type="button"
          class="secondary"
          disabled={page === 0 || rows.loading}
          onClick={() => go(page - 1)}
        >
          Previous page
        </button>
        <button
          type="button"
          class="secondary"
          disabled={rows.loading || pages === undefined || page + 1 >= pages}
          onClick={() => go(page + 1)}
        >
          Next page
        </button>
      </div>
    </section>
  );
}

/** The row in words: "row 5" (its rowid) or "the row id = 5" (its key). */
function rowLabel(identity: Identity, row: Record<string, unknown>): string {
  const show = (v: unknown) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
  if (identity.kind === 'rowid') return `row ${show(row[identity.key])}`;
  if (identity.kind === 'pk')
    return `the row ${identity.columns.map((c) => `${c} = ${show(row[c])}`).join(', ')}`;
  return 'the row';
}
const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
