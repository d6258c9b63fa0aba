import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
import { Alert, useAction } from '../../ui/kit.js';
import { formPath, formsCall, optionsOf, orNull, type FormField } from './api.js';
import { draftOf, emptyDraft, FieldInputs, inputOf, typeLabel, type FieldDraft } from './field-inputs.js';

type FieldsAnswer = { fields: FormField[]; message: string };

/**
 * A form's fields: add, edit, delete and reorder (Move up / Move down buttons, so the order is
 * changed by keyboard as well as by mouse). Focus follows the moved field.
 */
export function FieldsEditor({
  siteId,
  formId,
  initial,
}: {
  siteId: string;
  formId: number;
  initial: FormField[];
}) {
  const [fields, setFields] = useState(initial);
  const [editing, setEditing] = useState<string>();
  const [focusId, setFocusId] = useState<string>();
  const [done, setDone] = useState<string>();
  const { busy, error, run } = useAction();
  const path = `${formPath(formId)}/fields`;

  // Right after the render that moved the field, before the user can press another key.
  useLayoutEffect(() => {
    if (!focusId) return;
    const target = document.getElementById(focusId) as HTMLButtonElement | null;
    if (target && !target.disabled) target.focus();
    else
      document
        .getElementById(focusId.replace(/-(up|down)$/, (_, d) => (d === 'up' ? '-down' : '-up')))
        ?.focus();
    setFocusId(undefined);
  }, [focusId, fields]);

  const apply = async (action: () => Promise<FieldsAnswer>, focus?: string) => {
    setDone(undefined);
    const answer = await run(action);
    if (!answer) return false;
    setFields(answer.fields);
    setDone(answer.message);
    if (focus) setFocusId(focus);
    return true;
  };

  const move = (index: number, by: -1 | 1) => {
    const ids = fields.map((f) => f.id);
    const [moved] = ids.splice(index, 1);
    ids.splice(index + by, 0, moved!);
    return apply(
      () => formsCall<FieldsAnswer>(siteId, 'POST', `${path}/reorder`, { json: { field_ids: ids } }),
      `move-${moved}-${by < 0 ? 'up' : 'down'}`,
    );
  };
  const remove = (field: FormField) => {
    if (!confirm(`Delete the field "${field.label}"? Values already submitted stay in the submissions.`))
      return;
    void apply(() => formsCall<FieldsAnswer>(siteId, 'DELETE', `${path}/${field.id}`), 'add-field-title');
  };

  return (
    <section class="card stack" aria-labelledby="fields-title">
      <h2 id="fields-title" tabIndex={-1}>
        Fields
      </h2>
      <Alert error={error} />
      <Alert error={done} kind="success" />
      <ol class="field-list">
        {fields.map((field, i) => (
          <li key={field.id} class="field-item">
            <div class="field-summary">
              <strong>{field.label}</strong>{' '}
              <span class="hint">
                {field.name} · {typeLabel(field.type)}
                {field.required ? ' · required' : ' · optional'}
                {field.options ? ` · ${field.options.length} options` : ''}
              </span>
            </div>
            <div class="field-actions">
              <button
                type="button"
                class="secondary"
                id={`move-${field.id}-up`}
                disabled={busy || i === 0}
                aria-label={`Move up: ${field.label}`}
                onClick={() => void move(i, -1)}
              >
                Move up
              </button>
              <button
                type="button"
                class="secondary"
                id={`move-${field.id}-down`}
                disabled={busy || i === fields.length - 1}
                aria-label={`Move down: ${field.label}`}
                onClick={() => void move(i, 1)}
              >
                Move down
              </button>
              <button
                type="button"
                class="secondary"
                aria-expanded={editing === field.id}
                aria-label={`Edit: ${field.label}`}
                onClick={() => setEditing(editing === field.id ? undefined : field.id)}
              >
                Edit
              </button>
              <button
                type="button"
                class="danger"
                disabled={busy || fields.length === 1}
                aria-label={`Delete: ${field.label}`}
                onClick={() => remove(field)}
              >
                Delete
              </button>
            </div>
            {editing === field.id && (
              <EditField
                field={field}
                busy={busy}
                onSave={async (draft) => {
                  const ok = await apply(() =>
                    formsCall<FieldsAnswer>(siteId, 'PUT', `${path}/${field.id}`, {
                      json: {
                        label: draft.label,
                        required: draft.required,
                        placeholder: orNull(draft.placeholder),
                        ...(field.type === 'select' ? { options: optionsOf(draft.optionsText) } : {}),
                      },
                    }),
                  );
                  if (ok) setEditing(undefined);
                }}
                onCancel={() => setEditing(undefined)}
              />
            )}
          </li>
        ))}
      </ol>
      <AddField
        busy={busy}
        onAdd={(draft) =>
          apply(() => formsCall<FieldsAnswer>(siteId, 'POST', path, { json: inputOf(draft) }), 'fields-title')
        }
      />
    </section>
  );
}

function EditField({
  field,
  busy,
  onSave,
  onCancel,
}: {
  field: FormField;
  busy: boolean;
  onSave(draft: FieldDraft): Promise<void>;
  onCancel(): void;
}) {
  const [draft, setDraft] = useState(() => draftOf(field));
  useEffect(() => document.getElementById(`field-edit-${field.id}-label`)?.focus(), [field.id]);
  return (
    <form
      class="stack field-edit"
      aria-label={`Edit: ${field.label}`}
      onSubmit={(e) => {
        e.preventDefault();
        void onSave(draft);
      }}
    >
      <FieldInputs idPrefix={`edit-${field.id}`} draft={draft} onChange={setDraft} fixed />
      <div class="row">
        <button type="submit" aria-disabled={busy}>
          Save field
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function AddField({ busy, onAdd }: { busy: boolean; onAdd(draft: FieldDraft): Promise<boolean> }) {
  const [draft, setDraft] = useState(emptyDraft);
  return (
    <form
      class="stack add-field"
      aria-labelledby="add-field-title"
      onSubmit={async (e) => {
        e.preventDefault();
        if (await onAdd(draft)) setDraft(emptyDraft());
      }}
    >
      <h3 id="add-field-title" tabIndex={-1}>
        Add a field
      </h3>
      <FieldInputs idPrefix="add" draft={draft} onChange={setDraft} />
      <div>
        <button type="submit" aria-disabled={busy}>
          Add field
        </button>
      </div>
    </form>
  );
}
