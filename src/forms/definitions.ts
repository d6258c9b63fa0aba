import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/index.js';
import type { StoredField } from './tables.js';

/** The seven field types of spec 2.5. */
export const fieldTypes = ['text', 'email', 'tel', 'number', 'url', 'textarea', 'select'] as const;
export type FieldType = (typeof fieldTypes)[number];

/** Caps a form definition must respect (documented in the README and the schemas). */
export const FORM_CAPS = {
  fieldsPerForm: 50,
  nameChars: 120,
  descriptionChars: 1000,
  successMessageChars: 1000,
  redirectUrlChars: 2048,
  fieldNameChars: 64,
  labelChars: 200,
  placeholderChars: 200,
  optionsPerSelect: 100,
  optionChars: 200,
} as const;

/**
 * A field name is the key of its value in submission data and in the posted form: a letter, then
 * letters, digits, `_` or `-`. Names starting with `_` are reserved (`_t_trap`, `_t_start`).
 */
export const FIELD_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** A field's stable identifier (`id` in the field object, `{fieldId}` in paths). */
export function newFieldId(): string {
  return `fld_${randomBytes(6).toString('hex')}`;
}

export interface FieldInput {
  name: string;
  label: string;
  type: FieldType;
  required?: boolean;
  placeholder?: string | null;
  options?: string[] | null;
}

/** A stored field from its input: defaults applied, options kept only for `select`. */
export function toStoredField(input: FieldInput, id = newFieldId()): StoredField {
  return {
    id,
    name: input.name,
    label: input.label,
    type: input.type,
    required: input.required ?? false,
    placeholder: input.placeholder ?? null,
    options: input.type === 'select' ? (input.options ?? null) : null,
  };
}

/**
 * Checks a whole field list: unique names, options present (and unique) for every select, the
 * per-form cap. Throws INVALID_REQUEST naming the field at fault.
 */
export function assertValidFields(fields: readonly StoredField[], where = 'fields'): void {
  if (fields.length === 0) conflict(`${where} must contain at least one field`);
  if (fields.length > FORM_CAPS.fieldsPerForm)
    conflict(`${where} may contain at most ${FORM_CAPS.fieldsPerForm} fields (it has ${fields.length})`);
  const seen = new Set<string>();
  fields.forEach((field, i) => {
    const at = `${where}[${i}] (${field.name})`;
    const key = field.name.toLowerCase();
    if (seen.has(key)) conflict(`${at}: the name "${field.name}" is used by another field of this form`);
    seen.add(key);
    if (field.type === 'select') {
      if (!field.options || field.options.length === 0)
        conflict(`${at}: a select field needs options (a non-empty list of strings)`);
      if (new Set(field.options).size !== field.options.length) conflict(`${at}: options must be distinct`);
    }
  });
}

/** The slug a form name gives: lower-case ASCII words joined by `-` (at most 60 characters). */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/g, '');
  return slug || 'form';
}

/** `base`, else `base-2`, `base-3`, … : the first not in `taken`. */
export function uniqueSlug(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** Moves `fields` into the order of `ids`, which must name each field exactly once. */
export function reorderFields(fields: readonly StoredField[], ids: readonly string[]): StoredField[] {
  const byId = new Map(fields.map((f) => [f.id, f]));
  const unknown = ids.filter((id) => !byId.has(id));
  if (unknown.length > 0)
    conflict(`field_ids: unknown field id(s) ${unknown.map((id) => `"${id}"`).join(', ')}`);
  if (new Set(ids).size !== ids.length) invalid('field_ids: each field id may appear only once');
  const missing = fields.filter((f) => !ids.includes(f.id));
  if (missing.length > 0)
    conflict(
      `field_ids must list every field of the form; missing: ${missing.map((f) => `"${f.id}"`).join(', ')}`,
    );
  return ids.map((id) => byId.get(id)!);
}

/** Inserts `field` at 0-based `position` (clamped to the list; default: last). */
export function insertField(
  fields: readonly StoredField[],
  field: StoredField,
  position?: number,
): StoredField[] {
  const next = [...fields];
  const index = position === undefined ? next.length : Math.min(Math.max(position, 0), next.length);
  next.splice(index, 0, field);
  return next;
}

function invalid(message: string): never {
  throw new AppError('INVALID_REQUEST', { message });
}

/** A well-formed request that the form's current fields make impossible. */
function conflict(message: string): never {
  throw new AppError('CONFLICT', { message });
}
