import { z } from 'zod';
import { queryId, queryInt } from '../http/index.js';
import { FIELD_NAME_PATTERN, FORM_CAPS as C, fieldTypes } from './definitions.js';

// Request and response schemas of the forms API: they validate requests and write the OpenAPI
// document, so every cap below is visible to a generated client.

const noNul = (what: string) =>
  z
    .string()
    .refine((v) => !v.includes('\u0000'), `${what} must not contain NUL characters`)
    .meta({ pattern: '^[^\\u0000]*$' });
const text = (what: string, max: number) => noNul(what).max(max);
const nonBlank = (what: string, max: number) =>
  text(what, max)
    .refine((v) => v.trim() !== '', `${what} must not be empty`)
    .meta({ pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$' });

const httpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(C.redirectUrlChars)
  .describe('Where a plain (no-JavaScript) form post is redirected after a successful submission');
// RFC 5321's limits too: a local part of at most 64 characters, 254 in all.
const email = z
  .email({ error: 'must be an email address' })
  .max(254)
  .refine((v) => v.lastIndexOf('@') <= 64, 'must be an email address (at most 64 characters before the @)');

export const fieldType = z.enum(fieldTypes).describe('The input type of the field');

export const fieldName = z
  .string()
  .regex(
    FIELD_NAME_PATTERN,
    'must start with a letter and hold only letters, digits, `_` or `-` (at most 64)',
  )
  .describe('Key of the value in submission data and in the posted form; unique in the form');

const options = z
  .array(nonBlank('an option', C.optionChars))
  .min(1)
  .max(C.optionsPerSelect)
  .refine((list) => new Set(list).size === list.length, 'options must be distinct')
  .meta({ uniqueItems: true })
  .describe(
    `The choices of a select field (1-${C.optionsPerSelect}, each at most ${C.optionChars} characters)`,
  );

const fieldCommon = {
  label: nonBlank('label', C.labelChars).describe('The visible label'),
  required: z.boolean().optional().describe('Whether a submission must carry a value (default false)'),
  placeholder: text('placeholder', C.placeholderChars).nullable().optional(),
  options: options.nullable().optional().describe('Required when `type` is `select`; ignored otherwise'),
};

// A select needs its options: checked here (400 naming the field) and stated in the document.
const selectNeedsOptions = {
  if: { properties: { type: { const: 'select' } }, required: ['type'] },
  then: { required: ['options'], properties: { options: { type: 'array', minItems: 1 } } },
};
const optionsGiven = (field: { type: string; options?: string[] | null }) =>
  field.type !== 'select' || (field.options?.length ?? 0) > 0;
const optionsMessage = {
  message: 'a select field needs options (a non-empty list of strings)',
  path: ['options'],
};

const fieldShape = { name: fieldName, type: fieldType, ...fieldCommon };

export const fieldInput = z.object(fieldShape).refine(optionsGiven, optionsMessage).meta(selectNeedsOptions);

export const addFieldBody = z
  .object({
    ...fieldShape,
    position: z
      .number()
      .int()
      .min(0)
      .max(C.fieldsPerForm)
      .optional()
      .describe('0-based place in the field list (default: last)'),
  })
  .refine(optionsGiven, optionsMessage)
  .meta(selectNeedsOptions);

export const updateFieldBody = z
  .strictObject({
    label: fieldCommon.label.optional(),
    required: fieldCommon.required,
    placeholder: fieldCommon.placeholder,
    options: fieldCommon.options,
  })
  .refine(
    (b) => Object.values(b).some((v) => v !== undefined),
    'send at least one of label, required, placeholder, options',
  )
  .meta({ minProperties: 1 });

export const reorderBody = z.object({
  field_ids: z
    .array(z.string().max(64))
    .min(1)
    .max(C.fieldsPerForm)
    .refine((ids) => new Set(ids).size === ids.length, 'each field id may appear only once')
    .meta({ uniqueItems: true })
    .describe('Every field id of the form, once each, in the new order'),
});

const formCommon = {
  description: text('description', C.descriptionChars).nullable().optional(),
  success_message: text('success_message', C.successMessageChars)
    .nullable()
    .optional()
    .describe('Shown to the visitor after a successful submission'),
  redirect_url: httpUrl.nullable().optional(),
  notification_email: email
    .nullable()
    .optional()
    .describe('Where submissions are mailed (extension); null: the account email'),
};

export const createFormBody = z.object({
  name: nonBlank('name', C.nameChars).describe('The form name; its slug is derived from it'),
  fields: z.array(fieldInput).min(1).max(C.fieldsPerForm),
  is_active: z.boolean().optional().describe('Default true'),
  ...formCommon,
});

export const updateFormBody = z
  .strictObject({
    name: createFormBody.shape.name.optional(),
    fields: createFormBody.shape.fields.optional().describe('Replaces every field'),
    is_active: z.boolean().optional(),
    ...formCommon,
  })
  .refine(
    (b) => Object.values(b).some((v) => v !== undefined),
    'send at least one of name, description, fields, success_message, redirect_url, notification_email, is_active',
  )
  .meta({ minProperties: 1 });

export const formIdParam = z.object({
  id: z
    .string()
    .regex(/^\d{1,10}$/, 'must be a form id (a whole number)')
    .transform(Number)
    .pipe(z.number().int().min(1).max(2_147_483_647)),
});

export const siteQuery = z.object({
  site_id: queryId('The site (sessions only; a key acts on its own site)'),
});

const isoDate = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' });
const queryBool = z
  .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1')
  .optional();

export const submissionsQuery = z.object({
  page: queryInt({ min: 1, max: 1_000_000, default: 1 }),
  per_page: queryInt({ min: 1, max: 100, default: 50 }),
  is_spam: queryBool.describe('Only spam (true) or only non-spam (false); both when omitted'),
  is_archived: queryBool.describe('Only archived (true) or only unarchived (false); both when omitted'),
  is_read: queryBool.describe('Only read (true) or only unread (false); both when omitted'),
  from_date: isoDate.optional().describe('Submitted at or after this instant'),
  to_date: isoDate.optional().describe('Submitted at or before this instant'),
});

export const exportQuery = submissionsQuery.omit({ page: true, per_page: true });

export const updateSubmissionBody = z
  .strictObject({
    is_spam: z.boolean().optional(),
    is_read: z.boolean().optional(),
    is_archived: z.boolean().optional(),
  })
  .refine(
    (b) => Object.values(b).some((v) => v !== undefined),
    'send at least one of is_spam, is_read, is_archived',
  )
  .meta({ minProperties: 1 });

// Responses

export const field = z.object({
  id: z.string().describe('The field identifier: {fieldId} in paths, an entry of `field_ids`'),
  name: z.string(),
  label: z.string(),
  type: fieldType,
  required: z.boolean(),
  placeholder: z.string().nullable(),
  options: z.array(z.string()).nullable(),
  position: z.int().describe('0-based place in the form'),
});

export const formSummary = z.object({
  id: z.int(),
  uuid: z.uuid(),
  name: z.string(),
  slug: z.string(),
  is_active: z.boolean(),
  submission_count: z.int(),
  created_at: z.iso.datetime(),
});

/** The state of the address submissions are mailed to (extension). */
export const addressState = {
  notification_email_status: z
    .enum(['confirmed', 'pending'])
    .describe(
      'confirmed: submissions are mailed to the address. pending: a new address waits for its owner to follow the link mailed to it; submissions are stored but not mailed to it (nor later). The account’s own verified email is confirmed at once',
    ),
  notification_email_message: z.string().describe('The state in words, for people'),
};

export const form = formSummary.extend({
  description: z.string().nullable(),
  fields: z.array(field),
  success_message: z.string().nullable(),
  redirect_url: z.string().nullable(),
  notification_email: z.string().nullable(),
  ...addressState,
  submission_url: z.url(),
  site_id: z.int(),
  updated_at: z.iso.datetime(),
});

export const formResponse = z.object({ success: z.boolean(), form });
export const formsResponse = z.object({ success: z.boolean(), forms: z.array(formSummary), total: z.int() });
export const messageResponse = z.object({ success: z.boolean(), message: z.string() });
export const toggleResponse = z.object({ success: z.boolean(), is_active: z.boolean(), message: z.string() });
export const fieldResponse = z.object({
  success: z.boolean(),
  message: z.string(),
  field,
  fields: z.array(field),
});
export const fieldsResponse = z.object({ success: z.boolean(), message: z.string(), fields: z.array(field) });
export const snippetResponse = z.object({ success: z.boolean(), snippet: z.string() });

export const submission = z.object({
  id: z.int(),
  uuid: z.uuid(),
  data: z.record(z.string(), z.string()),
  is_spam: z.boolean(),
  spam_score: z.int().min(0).max(100),
  is_archived: z.boolean(),
  is_read: z.boolean(),
  submitted_at: z.iso.datetime(),
  read_at: z.iso.datetime().nullable(),
});

export const submissionDetail = submission.extend({
  metadata: z.object({
    ip_address: z.string().nullable().describe('HMAC-SHA256 of the client address (one-way, keyed)'),
    user_agent: z.string().nullable(),
    referer: z.string().nullable(),
    origin: z.string().nullable(),
  }),
  spam_reasons: z.array(z.string()).nullable(),
});

const formRef = z.object({ id: z.int(), uuid: z.uuid(), name: z.string() });

export const stats = z.object({
  total: z.int(),
  spam: z.int(),
  archived: z.int(),
  unread: z.int().describe('Not read and not spam'),
  legitimate: z.int().describe('Not spam'),
});

export const submissionsResponse = z.object({
  success: z.boolean(),
  form: formRef,
  submissions: z.array(submission),
  pagination: z.object({
    current_page: z.int(),
    per_page: z.int(),
    total_items: z.int(),
    total_pages: z.int(),
    has_more: z.boolean(),
    is_last_page: z.boolean(),
  }),
  stats,
});

export const submissionResponse = z.object({
  success: z.boolean(),
  form: formRef,
  submission: submissionDetail,
});

export const usageResponse = z.object({
  success: z.boolean(),
  plan: z.string(),
  forms: z.object({ used: z.int(), limit: z.int() }),
  submissions: z.object({
    month: z.string().describe('YYYY-MM (UTC)'),
    used: z.int().describe('Accepted (non-spam) submissions this month across the account'),
    limit: z.int(),
    resets_at: z.iso.datetime(),
  }),
});

export const submitAccepted = z.object({ success: z.boolean(), message: z.string() });

/** Path parameters, as documented. */
export const fieldIdParam = {
  type: 'string',
  pattern: '^fld_[0-9a-f]{12}$',
  description: 'The field identifier (the `id` of a field object)',
};
export const submissionUuidParam = { type: 'string', format: 'uuid', description: 'The submission' };

export const confirmAddressBody = z.object({
  // 32 random bytes, base64url (addresses.ts): one of that shape the server does not know is 401.
  token: z
    .string()
    .regex(/^[A-Za-z0-9_-]{43}$/, 'is not the token of a confirmation link: copy the whole link')
    .describe('The token of the mailed link (after `#token=`): 43 characters, A-Z a-z 0-9 - _'),
});
export const confirmAddressResponse = z.object({
  success: z.boolean(),
  message: z.string(),
  email: z.string().describe('The address now confirmed for the account that asked'),
});
export const resendAddressResponse = z.object({
  success: z.boolean(),
  message: z.string(),
  notification_email: z.string().describe('The address the link was mailed to'),
  ...addressState,
});
