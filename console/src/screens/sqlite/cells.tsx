import { useState } from 'preact/hooks';

/** Values longer than this show their start and a button for the rest. */
const SHORT = 80;

/**
 * One value of a row, as text: Preact sets it as a text node, so what a visitor wrote into the
 * database (markup, scripts) is shown, never interpreted. NULL is marked apart from the string
 * "NULL"; big integers and blobs come tagged from the API (`{"$bigint"}`, `{"$base64"}`).
 */
export function Cell({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <span class="sql-null">NULL</span>;
  if (typeof value === 'object') {
    const tagged = value as Record<string, unknown>;
    if (typeof tagged.$bigint === 'string') return <span class="sql-number">{tagged.$bigint}</span>;
    if (typeof tagged.$base64 === 'string') {
      const bytes =
        Math.floor((tagged.$base64.length * 3) / 4) - (tagged.$base64.match(/=+$/)?.[0].length ?? 0);
      return <LongText label={`BLOB, ${bytes} bytes`} text={tagged.$base64} />;
    }
    if (typeof tagged.$real === 'string') return <span class="sql-number">{tagged.$real}</span>;
    return <LongText text={JSON.stringify(value)} />;
  }
  if (typeof value === 'number') return <span class="sql-number">{String(value)}</span>;
  return <LongText text={String(value)} />;
}

/** A value cut to its start, with the whole text on demand (and back). */
function LongText({ text, label }: { text: string; label?: string }) {
  const [open, setOpen] = useState(false);
  if (!label && text.length <= SHORT) return <span class="sql-text">{text}</span>;
  return (
    <span class="sql-long">
      <span class="sql-text">{open ? text : (label ?? `${text.slice(0, SHORT)}…`)}</span>{' '}
      <button type="button" class="link" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Show less' : `Show all${label ? '' : ` ${text.length} characters`}`}
      </button>
    </span>
  );
}

/** Rows as a table: the columns given (a table's, even when empty) or those of the first row. */
export function RowsTable({
  rows,
  columns,
  caption,
}: {
  rows: Array<Record<string, unknown>>;
  columns?: string[];
  caption: string;
}) {
  const names = columns ?? Object.keys(rows[0] ?? {});
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={caption}>
      <table class="sql-rows">
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {names.map((name) => (
              <th key={name} scope="col">
                {name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, i) => (
            <tr key={i}>
              {names.map((name) => (
                <td key={name}>
                  <Cell value={row[name]} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
