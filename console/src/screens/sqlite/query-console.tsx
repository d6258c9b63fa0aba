import { useRef, useState } from 'preact/hooks';
import { ApiError } from '../../api.js';
import type { ScreenProps } from '../screen.js';
import { Alert, useAction } from '../../ui/kit.js';
import { RowsTable } from './cells.js';
import { DatabaseFrame } from './frame.js';
import { confirmWrites, databaseCall, type Permissions } from './sqlite-api.js';

/** The engine's answer when /query is given a statement that writes (src/sqlite/engine). */
const WRITE_ON_QUERY = 'query runs one read-only statement';

type Outcome =
  | {
      kind: 'rows';
      rows: Array<Record<string, unknown>>;
      rowCount: number;
      version: number;
      truncated: boolean;
    }
  | { kind: 'applied'; rowsAffected: number; lastInsertRowId: number; version: number };

/**
 * SQL with parameters against one database. Read-only unless the owner switches to write: each
 * mode has its own console token (read or readwrite), so the server, not this page, refuses a
 * write in read mode. A statement goes to /query first; the engine itself says when it writes
 * (then it goes to /exec), so no SQL is parsed here.
 */
export function SqliteQueryConsole({ params }: ScreenProps) {
  const siteId = Number(params.siteId);
  const path = params.db!;
  const [mode, setMode] = useState<Permissions>('read');
  const [sql, setSql] = useState('');
  const [paramsText, setParamsText] = useState('');
  const [outcome, setOutcome] = useState<Outcome>();
  const action = useAction();
  const result = useRef<HTMLHeadingElement>(null);

  const switchMode = (box: HTMLInputElement) => {
    const write = box.checked;
    if (write && !confirmWrites(path)) {
      box.checked = false;
      return;
    }
    setMode(write ? 'readwrite' : 'read');
  };

  const run = async (event: Event) => {
    event.preventDefault();
    setOutcome(undefined);
    const done = await action.run(async (): Promise<Outcome> => {
      const values = parseParams(paramsText);
      const db = { siteId, path, mode };
      const json = { sql, ...(values ? { params: values } : {}) };
      try {
        const r = await databaseCall<Omit<Extract<Outcome, { kind: 'rows' }>, 'kind'>>(
          db,
          'POST',
          '/api/v1/sqlite/query',
          { json },
        );
        return { kind: 'rows', ...r, truncated: r.truncated ?? false };
      } catch (err) {
        if (!(err instanceof ApiError && err.message.startsWith(WRITE_ON_QUERY))) throw err;
      }
      const r = await databaseCall<Omit<Extract<Outcome, { kind: 'applied' }>, 'kind'>>(
        db,
        'POST',
        '/api/v1/sqlite/exec',
        { json },
      );
      return { kind: 'applied', ...r };
    });
    if (done) {
      setOutcome(done);
      requestAnimationFrame(() => result.current?.focus());
    }
  };

  const writing = mode === 'readwrite';
  return (
    <DatabaseFrame siteId={params.siteId!} path={path} title="Query">
      <div class={`mode ${writing ? 'mode-write' : 'mode-read'}`} role="status">
        <strong>{writing ? 'Write mode' : 'Read-only'}</strong>
        {writing
          ? ': statements that change data are applied at once.'
          : ': statements that change data are refused by the server. Switch to write to run them.'}
      </div>
      <form class="stack" onSubmit={run}>
        <label class="check">
          <input
            id="allow-writes"
            type="checkbox"
            checked={writing}
            onChange={(e) => switchMode(e.currentTarget)}
          />{' '}
          Allow writes to this database
        </label>
        <div class="field">
          <label for="sql">SQL (one statement, ? for parameters)</label>
          <textarea
            id="sql"
            class="code"
            rows={6}
            spellcheck={false}
            value={sql}
            placeholder="SELECT * FROM items WHERE id = ?"
            onInput={(e) => setSql(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void run(e);
            }}
            aria-describedby="sql-hint"
          />
          <small id="sql-hint" class="hint">
            Ctrl+Enter runs it.
          </small>
        </div>
        <div class="field">
          <label for="sql-params">Parameters (JSON array, optional)</label>
          <input
            id="sql-params"
            class="code"
            value={paramsText}
            placeholder='["apple", 3]'
            onInput={(e) => setParamsText(e.currentTarget.value)}
          />
        </div>
        <div>
          <button type="submit" disabled={action.busy || sql.trim() === ''}>
            {action.busy ? 'Running…' : 'Run'}
          </button>
        </div>
      </form>
      <Alert error={action.error} />
      {outcome && (
        <section class="stack" aria-labelledby="result-title">
          <h2 id="result-title" tabIndex={-1} ref={result}>
            Result
          </h2>
          {outcome.kind === 'rows' ? (
            <>
              <p class="result-facts">
                {outcome.rowCount} {outcome.rowCount === 1 ? 'row' : 'rows'} · version {outcome.version}
                {outcome.truncated && ' · cut at the answer’s size limit'}
              </p>
              {outcome.rows.length > 0 && <RowsTable rows={outcome.rows} caption="Query result" />}
            </>
          ) : (
            <p class="result-facts">
              Applied: {outcome.rowsAffected} {outcome.rowsAffected === 1 ? 'row' : 'rows'} changed · last
              insert rowid {outcome.lastInsertRowId} · version {outcome.version}
            </p>
          )}
        </section>
      )}
    </DatabaseFrame>
  );
}

/** The parameters as the API takes them, or undefined when none were given. */
function parseParams(text: string): unknown[] | undefined {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('Parameters must be a JSON array, e.g. ["apple", 3].');
  }
  if (!Array.isArray(value)) throw new Error('Parameters must be a JSON array, e.g. ["apple", 3].');
  return value;
}
