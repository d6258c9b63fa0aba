import { useState } from 'preact/hooks';
import { FILTER_OPS, takesValue, type Filter, type FilterOp, type SchemaTable } from './table-sql.js';

/** Rows of one column that meet a condition, filtered by the server (the value goes as a parameter). */
export function FilterForm({
  table,
  filter,
  onFilter,
}: {
  table: SchemaTable;
  filter: Filter | undefined;
  onFilter(filter: Filter | undefined): void;
}) {
  const [column, setColumn] = useState(filter?.column ?? table.columns[0]?.name ?? '');
  const [op, setOp] = useState<FilterOp>(filter?.op ?? 'contains');
  const [value, setValue] = useState(filter?.value ?? '');
  return (
    <form
      class="row filter"
      aria-label={`Filter the rows of ${table.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        onFilter({ column, op, value });
      }}
    >
      <div class="field">
        <label for="filter-column">Column</label>
        <select id="filter-column" value={column} onChange={(e) => setColumn(e.currentTarget.value)}>
          {table.columns.map((c) => (
            <option key={c.name} value={c.name}>
              {c.name}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="filter-op">Condition</label>
        <select id="filter-op" value={op} onChange={(e) => setOp(e.currentTarget.value as FilterOp)}>
          {FILTER_OPS.map(([key, words]) => (
            <option key={key} value={key}>
              {words}
            </option>
          ))}
        </select>
      </div>
      {takesValue(op) && (
        <div class="field">
          <label for="filter-value">Value</label>
          <input id="filter-value" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </div>
      )}
      <button type="submit" class="secondary">
        Filter
      </button>
      {filter && (
        <button
          type="button"
          class="link"
          onClick={() => {
            setValue('');
            onFilter(undefined);
          }}
        >
          Clear the filter
        </button>
      )}
    </form>
  );
}
