import { define, quotaCommon, quotaCommonOf, type PlanParams } from '../define.js';

/**
 * Codes of the forms domain: plan limits on forms and submissions, and submissions refused.
 */
export const formErrors = {
  FORM_LIMIT: define<PlanParams & { current: number; limit: number }>({
    status: 403,
    error: 'Form limit reached',
    message: (p) =>
      `Your ${p.plan} plan allows ${p.limit} forms and this account has ${p.current}. Delete a form or upgrade.`,
    extra: (p) => ({
      current_form_count: p.current,
      form_limit: p.limit,
      ...quotaCommonOf(p),
    }),
    extraSchema: (z) => ({
      current_form_count: z.int().describe('Forms the account has'),
      form_limit: z.int().describe('Forms the plan allows'),
      ...quotaCommon(z),
    }),
    description: 'The account already has as many forms as its plan allows',
  }),
  SUBMISSION_LIMIT: define<{ used: number; limit: number; plan: string; resetsAt: string }>({
    status: 403,
    error: 'Submission limit reached',
    message: (p) =>
      `This form's account has used its ${p.limit} submissions for this month (${p.plan} plan); submissions are accepted again from ${p.resetsAt}.`,
    extra: (p) => ({ submissions_this_month: p.used, submission_limit: p.limit, resets_at: p.resetsAt }),
    extraSchema: (z) => ({
      submissions_this_month: z.int().describe('Accepted submissions this calendar month (UTC)'),
      submission_limit: z.int().describe('Submissions per month the plan allows'),
      resets_at: z.iso.datetime().describe('When the monthly counter resets (the 1st of next month, UTC)'),
    }),
    description: 'The account has used its monthly submissions; new ones are refused until the 1st (UTC)',
  }),
  FORM_INACTIVE: define({
    status: 403,
    error: 'Form disabled',
    message: () => 'This form is not accepting submissions.',
    description: 'The form is disabled (toggle it to accept submissions again)',
  }),
  ORIGIN_NOT_ALLOWED: define({
    status: 403,
    error: 'Forbidden',
    message: () => "Submissions to this form are accepted only from the account's sites.",
    description: "The request's Origin is not one of the account's sites or custom domains",
  }),
  SUBMISSION_INVALID: define<{ fields: Record<string, string> }>({
    status: 400,
    error: 'Validation failed',
    message: (p) =>
      Object.entries(p.fields)
        .map(([name, problem]) => `${name}: ${problem}`)
        .join('; '),
    extra: (p) => ({ fields: p.fields }),
    extraSchema: (z) => ({
      fields: z.record(z.string(), z.string()).describe('What is wrong with each field, by field name'),
    }),
    description:
      'A submitted value does not fit its field (required, email, url, tel, number, select option)',
  }),
  // 401, as the account API's mailed tokens (INVALID_TOKEN) and every credential the spec refuses.
  NOTIFICATION_LINK_INVALID: define<{ why: 'unknown' | 'used' | 'expired'; message: string }>({
    status: 401,
    error: 'INVALID_TOKEN',
    message: (p) => p.message,
    extra: (p) => ({ reason: p.why }),
    extraSchema: (z) => ({
      reason: z
        .enum(['unknown', 'used', 'expired'])
        .describe('unknown: no such link (or a newer one replaced it); used: already followed; expired'),
    }),
    description: 'A notification address confirmation link that is unknown, already used or expired',
  }),
  NOTIFICATION_MAIL_OFF: define({
    status: 409,
    error: 'Conflict',
    message: () =>
      'This server sends no mail (SMTP is not configured), so a notification address cannot be confirmed. Submissions are stored and listed as usual.',
    description: 'A confirmation link was asked for on a server without SMTP',
  }),
} as const;
