import { useEffect, useRef, useState } from 'preact/hooks';
import type { ScreenProps } from '../../routes.js';
import { Alert, useLoad } from '../../ui/kit.js';
import { RowsTable } from './cells.js';
import { DatabaseFrame } from './frame.js';
import { databaseCall, quoteIdent } from './sqlite-api.js';

export const PAGE_SIZE = 50;

interface SchemaTable {
  name: string;
  sql: string;
  columns: Array<{ name: string; type: string; notNull: boolean; primaryKey: boolean }>;
}
interface QueryAnswer {
  rows: Array<Record<string, unknown>>;
  rowCount: number;
  version: number;
  truncated?: boolean;
}

/**
 * A database's tables (from its schema) and their rows, a page at a time (LIMIT/OFFSET), through
 * the console's read-only token: browsing can never change anything.
 */
export function SqliteTableBrowser({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const path = params.db!;
  const db = { siteId, path, mode: 'read' as const };
  const schema = useLoad(
    () => databaseCall<{ tables: SchemaTable[] }>(db, 'GET', '/api/v1/sqlite/schema').then((r) => r.tables),
    [siteId, path],
  );
  const [selected, setSelected] = useState<string>();
  const tables = schema.data ?? [];
  const table = tables.find((t) => t.name === selected) ?? tables[0];

  return (
    <DatabaseFrame siteId={params.siteId!} path={path} title="Tables">
      <Alert error={schema.error} />
      {schema.data && tables.length === 0 && (
        <p>This database has no table yet. Create one in the query console (switch it to write first).</p>
      )}
      {tables.length > 0 && (
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
          {table && <TableRows key={table.name} db={db} table={table} />}
        </div>
      )}
    </DatabaseFrame>
  );
}

function TableRows({
  db,
  table,
}: {
  db: { siteId: number; path: string; mode: 'read' };
  table: SchemaTable;
}) {
  const [page, setPage] = useState(0);
  const name = quoteIdent(table.name);
  const count = useLoad(
    () =>
      databaseCall<QueryAnswer>(db, 'POST', '/api/v1/sqlite/query', {
        json: { sql: `SELECT count(*) AS n FROM ${name}` },
      }).then((r) => Number(r.rows[0]?.n ?? 0)),
    [table.name],
  );
  const rows = useLoad(
    () =>
      databaseCall<QueryAnswer>(db, 'POST', '/api/v1/sqlite/query', {
        json: { sql: `SELECT * FROM ${name} LIMIT ? OFFSET ?`, params: [PAGE_SIZE, page * PAGE_SIZE] },
      }),
    [table.name, page],
  );
  const heading = useRef<HTMLHeadingElement>(null);
  const moved = useRef(false);
  useEffect(() => {
    // After a page change, focus goes to what changed (the rows' heading), not back to the top.
    if (moved.current && !rows.loading) heading.current?.focus();
  }, [rows.loading, page]);
  const total = count.data;
  const pages = total === undefined ? undefined : Math.max(1, Math.ceil(total / PAGE_SIZE));
  const first = page * PAGE_SIZE + 1;
  const last = page * PAGE_SIZE + (rows.data?.rows.length ?? 0);
  const go = (to: number) => {
    moved.current = true;
    setPage(to);
  };

  return (
    <section class="stack table-rows" aria-labelledby="rows-title">
      <h2 id="rows-title" tabIndex={-1} ref={heading}>
        {table.name}
      </h2>
      <details>
        <summary>CREATE TABLE statement</summary>
        <pre class="sql-source">{table.sql}</pre>
      </details>
      <Alert error={rows.error ?? count.error} />
      <p role="status" class="page-status">
        {rows.loading
          ? 'Loading rows…'
          : total === 0
            ? 'No rows.'
            : `Rows ${first}–${last}${total === undefined ? '' : ` of ${total}`}${pages ? ` · page ${page + 1} of ${pages}` : ''}`}
      </p>
      {rows.data && (
        <RowsTable
          rows={rows.data.rows}
          columns={table.columns.map((c) => c.name)}
          caption={`Rows of ${table.name}, page ${page + 1}`}
        />
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
