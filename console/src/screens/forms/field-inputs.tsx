import { Field } from '../../ui/kit.js';
import {
  FIELD_NAME_PATTERN,
  FIELD_TYPES,
  optionsOf,
  orNull,
  type FieldInput,
  type FieldType,
} from './api.js';

/** A field being written: options as typed (one per line) until sent. */
export interface FieldDraft {
  name: string;
  label: string;
  type: FieldType;
  required: boolean;
  placeholder: string;
  optionsText: string;
}

export const emptyDraft = (): FieldDraft => ({
  name: '',
  label: '',
  type: 'text',
  required: false,
  placeholder: '',
  optionsText: '',
});

export const draftOf = (field: FieldInput): FieldDraft => ({
  name: field.name,
  label: field.label,
  type: field.type,
  required: field.required,
  placeholder: field.placeholder ?? '',
  optionsText: (field.options ?? []).join('\n'),
});

export const inputOf = (draft: FieldDraft): FieldInput => ({
  name: draft.name.trim(),
  label: draft.label,
  type: draft.type,
  required: draft.required,
  placeholder: orNull(draft.placeholder),
  options: draft.type === 'select' ? optionsOf(draft.optionsText) : null,
});

/** A field name from its label ("Your name" → "your_name"), while the user has not typed one. */
export function nameFromLabel(label: string): string {
  const name = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^[^a-z]+|_+$/g, '')
    .slice(0, 64);
  return name;
}

const TYPE_LABELS: Record<FieldType, string> = {
  text: 'Text',
  email: 'Email',
  tel: 'Phone',
  number: 'Number',
  url: 'URL',
  textarea: 'Long text',
  select: 'Choice (select)',
};
export const typeLabel = (type: FieldType) => TYPE_LABELS[type];

/**
 * The inputs of one field. `fixed`: name and type cannot change (an existing field keeps them so
 * stored submissions keep their keys; delete and add the field instead).
 */
export function FieldInputs({
  idPrefix,
  draft,
  onChange,
  fixed = false,
}: {
  idPrefix: string;
  draft: FieldDraft;
  onChange(next: FieldDraft): void;
  fixed?: boolean;
}) {
  const set = (patch: Partial<FieldDraft>) => onChange({ ...draft, ...patch });
  const typeId = `${idPrefix}-type`;
  const optionsId = `${idPrefix}-options`;
  return (
    <div class="field-inputs">
      <Field
        label="Label"
        name={`${idPrefix}-label`}
        required
        maxLength={200}
        value={draft.label}
        onInput={(e) => {
          const label = e.currentTarget.value;
          // The name follows the label until the user writes one of their own.
          const follows = !fixed && draft.name === nameFromLabel(draft.label);
          set(follows ? { label, name: nameFromLabel(label) } : { label });
        }}
      />
      {!fixed && (
        <Field
          label="Name"
          name={`${idPrefix}-name`}
          required
          maxLength={64}
          pattern={FIELD_NAME_PATTERN}
          hint="The key in submissions: a letter, then letters, digits, _ or -"
          value={draft.name}
          onInput={(e) => set({ name: e.currentTarget.value })}
        />
      )}
      {!fixed && (
        <div class="field">
          <label for={typeId}>Type</label>
          <select
            id={typeId}
            value={draft.type}
            onChange={(e) => set({ type: e.currentTarget.value as FieldType })}
          >
            {FIELD_TYPES.map((type) => (
              <option key={type} value={type}>
                {typeLabel(type)}
              </option>
            ))}
          </select>
        </div>
      )}
      <Field
        label="Placeholder"
        name={`${idPrefix}-placeholder`}
        maxLength={200}
        value={draft.placeholder}
        onInput={(e) => set({ placeholder: e.currentTarget.value })}
      />
      <div class="field field-check">
        <label>
          <input
            type="checkbox"
            id={`${idPrefix}-required`}
            checked={draft.required}
            onChange={(e) => set({ required: e.currentTarget.checked })}
          />{' '}
          Required
        </label>
      </div>
      {draft.type === 'select' && (
        <div class="field field-wide">
          <label for={optionsId}>Options</label>
          <textarea
            id={optionsId}
            rows={4}
            required
            aria-describedby={`${optionsId}-hint`}
            value={draft.optionsText}
            onInput={(e) => set({ optionsText: e.currentTarget.value })}
          />
          <small id={`${optionsId}-hint`} class="hint">
            One choice a line, each different
          </small>
        </div>
      )}
    </div>
  );
}
