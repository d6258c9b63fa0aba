import { siteCall, siteSend, type CallOptions } from '../../api.js';

// The forms API's shapes (src/forms/schemas.ts) as the console reads them, and calls on the
// site's behalf with its temporary key.

export const FIELD_TYPES = ['text', 'email', 'tel', 'number', 'url', 'textarea', 'select'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** The field name rule of src/forms/definitions.ts, checked before asking the server. */
export const FIELD_NAME_PATTERN = '[A-Za-z][A-Za-z0-9_\\-]{0,63}';

export interface FormField {
  id: string;
  name: string;
  label: string;
  type: FieldType;
  required: boolean;
  placeholder: string | null;
  options: string[] | null;
  position: number;
}

export interface FieldInput {
  name: string;
  label: string;
  type: FieldType;
  required: boolean;
  placeholder: string | null;
  options: string[] | null;
}

export interface FormSummary {
  id: number;
  uuid: string;
  name: string;
  slug: string;
  is_active: boolean;
  submission_count: number;
  created_at: string;
}

export interface Form extends FormSummary {
  description: string | null;
  fields: FormField[];
  success_message: string | null;
  redirect_url: string | null;
  notification_email: string | null;
  submission_url: string;
  site_id: number;
  updated_at: string;
}

export interface Submission {
  id: number;
  uuid: string;
  data: Record<string, string>;
  is_spam: boolean;
  spam_score: number;
  is_archived: boolean;
  is_read: boolean;
  submitted_at: string;
  read_at: string | null;
}

export interface SubmissionDetail extends Submission {
  metadata: {
    ip_address: string | null;
    user_agent: string | null;
    referer: string | null;
    origin: string | null;
  };
  spam_reasons: string[] | null;
}

export interface SubmissionStats {
  total: number;
  spam: number;
  archived: number;
  unread: number;
  legitimate: number;
}

/** The three lists of a form's submissions (the console's tabs over them). */
export type SubmissionView = 'inbox' | 'archived' | 'spam';

export interface SubmissionPage {
  submissions: Submission[];
  pagination: { current_page: number; per_page: number; total_items: number; total_pages: number };
  stats: SubmissionStats;
}

export interface FormsUsage {
  plan: string;
  forms: { used: number; limit: number };
  submissions: { month: string; used: number; limit: number; resets_at: string };
}

/** A forms API call with the site's key. */
export const formsCall = <T>(siteId: string, method: string, path: string, options?: CallOptions) =>
  siteCall<T>(Number(siteId), method, path, options);

export const formsSend = (siteId: string, method: string, path: string, options?: CallOptions) =>
  siteSend(Number(siteId), method, path, options);

export const formPath = (formId: string | number) => `/api/v1/forms/${encodeURIComponent(String(formId))}`;

export const loadForm = (siteId: string, formId: string) =>
  formsCall<{ form: Form }>(siteId, 'GET', formPath(formId)).then((r) => r.form);

/** Optional text: blank means "none" (null), as the API stores it. */
export const orNull = (value: string): string | null => (value.trim() === '' ? null : value);

/** Options typed one per line, blank lines dropped. */
export const optionsOf = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

/** What each spam signal of src/forms/spam.ts means, in words for the owner. */
export const SPAM_REASONS: Record<string, string> = {
  honeypot_filled: 'The hidden trap field was filled in (people never see it).',
  no_anti_spam_fields: 'Neither anti-spam field was sent: not posted from the embedded form.',
  no_start_time: 'No start time was sent (a script, or a browser with JavaScript off).',
  start_time_in_future: 'The start time lies in the future, beyond clock skew.',
  submitted_too_fast: 'Sent less than 3 seconds after the form was shown.',
  links: 'Links in the text fields.',
  spam_phrases: 'Phrases typical of spam in the text fields.',
  all_caps: 'A text field is written almost entirely in capitals.',
  repeated_submission: 'The same content was sent to this form in the last 24 hours.',
  burst_from_ip: 'Many submissions from the same address in the last 10 minutes.',
};
