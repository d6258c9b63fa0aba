import { useEffect, useRef, useState } from 'preact/hooks';
import { Alert } from '../../ui/kit.js';
import { textOf, valueFor, type SchemaColumn, type SchemaTable } from './table-sql.js';

interface FieldState {
  text: string;
  isNull: boolean;
  /** The owner typed in it or ticked NULL: only such fields are written. */
  touched: boolean;
}

/**
 * One row's fields: empty for a new row (a field left alone takes the column's default), the row's
 * values for an edit (only the fields changed are written). NULL is a box of its own, apart from
 * an empty text. A blob is not editable here (the query console takes `{"$base64"}` parameters).
 */
export function RowEditor({
  table,
  row,
  title,
  busy,
  error,
  onSave,
  onCancel,
}: {
  table: SchemaTable;
  /** The row being edited; undefined: a new row. */
  row?: Record<string, unknown>;
  title: string;
  busy: boolean;
  error: unknown;
  onSave(values: Record<string, unknown>): void;
  onCancel(): void;
}) {
  const [fields, setFields] = useState<Record<string, FieldState>>(() =>
    Object.fromEntries(
      table.columns.map((c) => {
        const value = row?.[c.name];
        return [
          c.name,
          { text: textOf(value) ?? '', isNull: row !== undefined && value === null, touched: false },
        ];
      }),
    ),
  );
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const set = (name: string, change: Partial<FieldState>) =>
    setFields((old) => ({ ...old, [name]: { ...old[name]!, ...change, touched: true } }));

  const submit = (event: Event) => {
    event.preventDefault();
    const values: Record<string, unknown> = {};
    for (const column of table.columns) {
      const field = fields[column.name]!;
      if (!field.touched || !editable(column, row)) continue;
      values[column.name] = field.isNull ? null : valueFor(column, field.text);
    }
    onSave(values);
  };

  const id = (column: SchemaColumn) => `row-field-${table.columns.indexOf(column)}`;
  return (
    <section class="card stack row-editor" aria-labelledby="row-editor-title">
      <h3 id="row-editor-title" tabIndex={-1} ref={heading}>
        {title}
      </h3>
      <p class="hint">
        {row
          ? 'Only the fields you change are written.'
          : 'A field left empty takes the column’s default. Fields marked * need a value.'}
      </p>
      <form class="stack" onSubmit={submit}>
        {table.columns.map((column) => {
          const field = fields[column.name]!;
          const canEdit = editable(column, row);
          const required =
            !row && column.notNull && column.defaultValue == null && !rowidAlias(column, table);
          return (
            <div class="field row-field" key={column.name}>
              <label for={id(column)}>
                {column.name}
                {required && (
                  <span class="required" aria-hidden="true">
                    {' '}
                    *
                  </span>
                )}{' '}
                <span class="hint">{describeColumn(column, table)}</span>
              </label>
              <div class="row-input">
                <input
                  id={id(column)}
                  name={column.name}
                  value={field.isNull ? '' : field.text}
                  disabled={field.isNull || !canEdit}
                  required={required && !field.isNull}
                  aria-required={required ? 'true' : undefined}
                  placeholder={field.isNull ? 'NULL' : undefined}
                  onInput={(e) => set(column.name, { text: e.currentTarget.value })}
                />
                {!column.notNull && canEdit && (
                  <label class="check">
                    <input
                      type="checkbox"
                      checked={field.isNull}
                      onChange={(e) => set(column.name, { isNull: e.currentTarget.checked })}
                    />{' '}
                    NULL
                  </label>
                )}
              </div>
              {!canEdit && <small class="hint">A blob: change it in the query console.</small>}
            </div>
          );
        })}
        <Alert error={error} />
        <div class="row">
          <button type="submit" aria-disabled={busy}>
            {busy ? 'Saving…' : row ? 'Save the row' : 'Add the row'}
          </button>
          <button type="button" class="secondary" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}

const editable = (column: SchemaColumn, row: Record<string, unknown> | undefined) =>
  !row || textOf(row[column.name]) !== undefined;

/** INTEGER PRIMARY KEY: the rowid itself, given one when left empty. */
const rowidAlias = (column: SchemaColumn, table: SchemaTable) =>
  column.primaryKey &&
  column.type.toUpperCase() === 'INTEGER' &&
  table.columns.filter((c) => c.primaryKey).length === 1;

function describeColumn(column: SchemaColumn, table: SchemaTable): string {
  const facts = [column.type || 'any type'];
  if (column.primaryKey)
    facts.push(rowidAlias(column, table) ? 'primary key, numbered when empty' : 'primary key');
  if (column.notNull) facts.push('not NULL');
  if (column.defaultValue != null) facts.push(`default ${column.defaultValue}`);
  return `(${facts.join(', ')})`;
}
