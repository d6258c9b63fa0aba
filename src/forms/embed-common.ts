// What the three embed snippets share: the form they describe, their default texts, and the
// escaping for each context a value can land in.
import type { FieldType } from './spam.js';

export interface EmbedField {
  name: string;
  label: string;
  type: FieldType;
  required: boolean;
  placeholder: string | null;
  options: string[] | null;
}

export interface EmbedForm {
  uuid: string;
  name: string;
  /** `{base_url}/f/<uuid>` */
  submissionUrl: string;
  successMessage: string | null;
  redirectUrl: string | null;
  fields: EmbedField[];
}

/** Shown when the form has no success message of its own. */
export const DEFAULT_SUCCESS_MESSAGE = 'Thank you! Your message has been sent.';
/** Shown by the snippets when the submission is refused and the answer carries no message. */
export const DEFAULT_ERROR_MESSAGE = 'Sorry, the form could not be sent. Please try again.';

/** Escapes text for HTML content and for double-quoted attribute values. */
export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * A value as a JavaScript literal that is safe inside an HTML <script> element: JSON, with `<`,
 * `>` and `&` written as \u escapes (so no `</script>` or `<!--` can appear) and the two line
 * separators JavaScript once refused in strings.
 */
export function scriptLiteral(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** A POSIX shell word that stands for `value` exactly: single-quoted, each `'` as `'\''`. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Only http(s) addresses are followed after a submission (never `javascript:`). */
export function safeRedirectUrl(url: string | null): string | null {
  return url !== null && /^https?:\/\//i.test(url) ? url : null;
}
