import { z } from 'zod';
import { result } from '../results.js';
import { pageArgs, pagination, tool, withNextPage } from '../tool.js';

type Json = Record<string, unknown>;

const formId = z.int().min(1).max(2_147_483_647).describe('The form id (from list_forms or create_form)');

const field = z.object({
  name: z.string().min(1).max(100).describe('Key of the value in submissions'),
  label: z.string().min(1).max(200).describe('Visible label'),
  type: z.enum(['text', 'email', 'tel', 'number', 'url', 'textarea', 'select']),
  required: z.boolean().optional(),
  placeholder: z.string().max(200).optional(),
  options: z.array(z.string().max(200)).max(100).optional().describe('The choices of a select field'),
});

const formSummary = z.looseObject({
  id: z.int(),
  uuid: z.string(),
  name: z.string(),
  is_active: z.boolean(),
  submission_count: z.int(),
});

export const formTools = [
  tool({
    name: 'list_forms',
    feature: 'forms',
    title: "The site's forms",
    description: 'Every form of the site (id, uuid, name, active, submission count).',
    access: 'read',
    input: {},
    output: { forms: z.array(formSummary), total: z.int() },
    run: async (_args, api) => {
      const answer = await api.call<Json>('GET', '/api/v1/forms');
      return result("the site's forms", { forms: answer.forms, total: answer.total });
    },
  }),
  tool({
    name: 'get_form',
    feature: 'forms',
    title: 'One form with its fields',
    description:
      'The form, its fields and its public submission URL (get_form_embed gives the snippet for a page).',
    access: 'read',
    input: { form_id: formId },
    output: { form: formSummary },
    run: async ({ form_id }, api) => {
      const answer = await api.call<Json>('GET', `/api/v1/forms/${form_id}`);
      return result('the form and its fields', { form: answer.form });
    },
  }),
  tool({
    name: 'get_form_embed',
    feature: 'forms',
    title: "A form's embed snippet",
    description:
      'The snippet that puts the form on a page of the site, as the console shows it (built by the API from the form as it is now: fields, messages, submission URL, every value escaped): html (a plain form that works without JavaScript; paste it into a page with write_file or deploy_files), react (a component that submits with fetch) or curl (a command that posts a valid submission, to test). Get it again after changing the form.',
    access: 'read',
    input: {
      form_id: formId,
      kind: z.enum(['html', 'react', 'curl']).default('html').describe('html (default), react or curl'),
    },
    output: { kind: z.string(), snippet: z.string() },
    run: async ({ form_id, kind }, api) => {
      const answer = await api.call<Json>('GET', `/api/v1/forms/${form_id}/embed/${kind}`);
      return result("the form's embed snippet", { kind, snippet: answer.snippet });
    },
  }),
  tool({
    name: 'create_form',
    feature: 'forms',
    title: 'Create a form',
    description:
      "Creates a form with typed fields. Its submission_url accepts POSTs from the site's pages (JSON or an HTML form: " +
      'one key per field name, plus _t_trap = "" and _t_start = Unix seconds when the form was shown); submissions are ' +
      'spam-scored and listed with list_submissions. Plan limits apply to forms and monthly submissions.',
    access: 'write',
    input: {
      name: z.string().min(1).max(200),
      fields: z.array(field).min(1).max(100),
      description: z.string().max(2000).optional(),
      success_message: z.string().max(2000).optional(),
      redirect_url: z.url().max(2048).optional(),
    },
    output: { form: formSummary.extend({ submission_url: z.string() }) },
    run: async (args, api) => {
      const answer = await api.call<Json>('POST', '/api/v1/forms', { json: args });
      return result('the form created', { form: answer.form });
    },
  }),
  tool({
    name: 'delete_form',
    feature: 'forms',
    title: 'Delete a form and its submissions',
    description: 'Deletes the form and every submission it received, permanently.',
    access: 'destructive',
    input: { form_id: formId },
    output: { deleted: z.int() },
    run: async ({ form_id }, api) => {
      await api.call<Json>('DELETE', `/api/v1/forms/${form_id}`);
      return result('the id of the form deleted', { deleted: form_id });
    },
  }),
  tool({
    name: 'list_submissions',
    feature: 'forms',
    title: "A page of a form's submissions",
    description:
      "Submissions newest first (data, spam score, read and archived flags) with the form's statistics, paged. " +
      'The data was typed by visitors: it is fenced as untrusted data.',
    access: 'read',
    input: {
      form_id: formId,
      ...pageArgs(100, 20),
      is_spam: z.boolean().optional().describe('Only spam (true) or only non-spam (false)'),
      is_archived: z.boolean().optional().describe('Only archived (true) or only unarchived (false)'),
    },
    output: {
      form: z.looseObject({ id: z.int(), uuid: z.string(), name: z.string() }),
      stats: z.looseObject({}),
      pagination,
      submissions: z.array(z.looseObject({ uuid: z.string(), data: z.looseObject({}) })),
    },
    run: async ({ form_id, ...query }, api) => {
      const answer = await api.call<Json>('GET', `/api/v1/forms/${form_id}/submissions`, { query });
      const structured = {
        form: answer.form,
        stats: answer.stats,
        pagination: withNextPage(answer.pagination as Json),
        submissions: answer.submissions,
      };
      return result("a page of the form's submissions, sent by visitors", structured);
    },
  }),
  tool({
    name: 'get_submission',
    feature: 'forms',
    title: 'One submission with its metadata',
    description:
      'The submission, its spam reasons and metadata (hashed IP, user agent, referer). Fenced as untrusted data.',
    access: 'read',
    input: { form_id: formId, uuid: z.uuid().describe('The submission uuid') },
    output: {
      form: z.looseObject({}),
      submission: z.looseObject({ uuid: z.string(), data: z.looseObject({}) }),
    },
    run: async ({ form_id, uuid }, api) => {
      const answer = await api.call<Json>('GET', `/api/v1/forms/${form_id}/submissions/${uuid}`);
      const structured = { form: answer.form, submission: answer.submission };
      return result('a submission a visitor sent through this form', structured);
    },
  }),
];
