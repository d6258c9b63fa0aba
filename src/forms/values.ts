import { createHash } from 'node:crypto';
import { AppError } from '../errors/index.js';
import type { StoredField } from './tables.js';

/** Longest value a field takes, in characters (textarea gets room for a message). */
export const VALUE_CAPS = { textarea: 10_000, other: 1_000, email: 254 } as const;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const TEL = /^\+?[0-9 ().\-/]{3,32}$/;
const NUMBER = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/**
 * The submitted values checked against the form's fields: one string per field (trimmed; empty
 * optional fields are left out). Keys that name no field are ignored, so a page can carry extra
 * inputs (a CSRF token, a tracking field) without breaking the form. Every problem is reported at
 * once, by field name, as SUBMISSION_INVALID.
 */
export function checkValues(
  fields: readonly StoredField[],
  raw: Record<string, unknown>,
): Record<string, string> {
  const data: Record<string, string> = {};
  const problems: Record<string, string> = {};
  for (const field of fields) {
    const value = raw[field.name];
    if (Array.isArray(value) || (value !== null && typeof value === 'object')) {
      problems[field.name] = 'must be a single value (a string or a number)';
      continue;
    }
    const text = value === undefined || value === null ? '' : String(value).trim();
    if (text === '') {
      if (field.required) problems[field.name] = `${field.label} is required`;
      continue;
    }
    const problem = problemWith(field, text);
    if (problem) problems[field.name] = problem;
    else data[field.name] = text;
  }
  if (Object.keys(problems).length > 0) throw new AppError('SUBMISSION_INVALID', { fields: problems });
  return data;
}

function problemWith(field: StoredField, text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  const max =
    field.type === 'textarea'
      ? VALUE_CAPS.textarea
      : field.type === 'email'
        ? VALUE_CAPS.email
        : VALUE_CAPS.other;
  if (text.length > max) return `must be at most ${max} characters`;
  switch (field.type) {
    case 'email':
      return EMAIL.test(text) ? undefined : 'must be an email address';
    case 'url':
      return isHttpUrl(text) ? undefined : 'must be an http(s) URL';
    case 'tel':
      return TEL.test(text) && (text.match(/\d/g)?.length ?? 0) >= 3 ? undefined : 'must be a phone number';
    case 'number':
      return NUMBER.test(text) && Number.isFinite(Number(text)) ? undefined : 'must be a number';
    case 'select':
      return field.options?.includes(text)
        ? undefined
        : `must be one of: ${(field.options ?? []).join(', ')}`;
    default:
      return undefined;
  }
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** `_t_start` as Unix seconds; undefined when absent or not a whole number (milliseconds accepted). */
export function parseStartedAt(value: unknown): number | undefined {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
  if (!/^\d{1,13}$/.test(text)) return undefined;
  const n = Number(text);
  return n > 100_000_000_000 ? Math.floor(n / 1000) : n;
}

/** The honeypot's value as sent (undefined when absent). */
export function trapValue(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Identifies identical submissions: sha256 over the values, case- and space-insensitive. */
export function contentHash(data: Record<string, string>): string {
  const normalised = Object.keys(data)
    .sort()
    .map((k) => [k, data[k]!.toLowerCase().replace(/\s+/g, ' ')]);
  return createHash('sha256').update(JSON.stringify(normalised)).digest('hex');
}
