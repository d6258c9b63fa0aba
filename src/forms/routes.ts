import { Router } from 'express';
import type { Config } from '../config/index.js';
import type { ErrorCode } from '../errors/index.js';
import { jsonBody, pathId, type RouteRegistry } from '../http/index.js';
import { planFor, siteForRequest, type Platform } from '../platform/index.js';
import type { NotificationAddresses } from './addresses.js';
import { addressRoutes } from './address-routes.js';
import { curlSnippet, htmlSnippet, reactSnippet } from './embed.js';
import { fieldJson, fieldsJson, formJson, formSummaryJson, submissionUrl } from './format.js';
import * as s from './schemas.js';
import { fieldIdParam } from './schemas.js';
import { formId, scopeOf, submissionRoutes } from './submission-routes.js';
import type { FormsService } from './service.js';
import type { Submissions } from './submissions.js';
import type { FormRow } from './tables.js';

export function formsRoutes(deps: {
  config: Config;
  platform: Platform;
  forms: FormsService;
  submissions: Submissions;
  addresses: NotificationAddresses;
  registry: RouteRegistry;
}): Router {
  const { config, platform, forms, submissions, addresses, registry } = deps;
  const router = Router();
  const tags = ['Forms'];
  const body = jsonBody('256kb');
  const notFound: ErrorCode[] = ['NOT_FOUND'];
  // A well-formed change the form's current fields make impossible (a name taken, a field list
  // that is not the form's) is a 409, like every other conflict with stored state.
  const editErrors: ErrorCode[] = ['NOT_FOUND', 'CONFLICT'];
  const snippetForm = (row: FormRow) => ({
    uuid: row.uuid,
    name: row.name,
    submissionUrl: submissionUrl(config.baseUrl, row.uuid),
    successMessage: row.successMessage,
    redirectUrl: row.redirectUrl,
    fields: row.fields,
  });
  const full = async (row: FormRow) => formJson(row, config.baseUrl, await addresses.stateOf(row));

  registry.add(router, {
    method: 'get',
    path: '/api/v1/forms',
    summary: 'List the forms of the site (a session: of the account)',
    description:
      "Lists each form with its id, uuid, slug, state and submission count, oldest first. A site key lists its own site's forms; an account session lists every form of the account. Changes nothing.",
    tags,
    auth: 'apiKeyOrSession',
    responses: { 200: { description: 'The forms, oldest first', schema: s.formsResponse } },
    handler: async ({ req, res }) => {
      const rows = await forms.list(scopeOf(req));
      res.json({ success: true, forms: rows.map(formSummaryJson), total: rows.length });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/forms',
    summary: 'Create a form with its fields',
    description:
      'The form starts active with no submissions. Its `slug` is derived from the name (unique in the site). ' +
      'Fails with 403 when the account already has as many forms as its plan allows.',
    tags,
    auth: 'apiKeyOrSession',
    // LIMIT_REACHED: too many notification addresses of the account wait for confirmation.
    errors: ['KEY_SCOPE', 'NOT_FOUND', 'FORM_LIMIT', 'CONFLICT', 'LIMIT_REACHED'],
    middleware: [body],
    query: s.siteQuery,
    body: s.createFormBody,
    responses: { 201: { description: 'The new form', schema: s.formResponse } },
    handler: async ({ req, res, query, body }) => {
      const site = await siteForRequest(req, platform, query.site_id);
      const row = await forms.create(site.id, body);
      res.status(201).json({ success: true, form: await full(row) });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/forms/usage',
    summary: "The account's forms and this month's submissions against its plan",
    description:
      "How many forms the account has against its plan's cap, and how many submissions were accepted this calendar month (UTC) against the monthly limit, with the instant the counter resets. Spam is stored but not counted.",
    tags,
    auth: 'apiKeyOrSession',
    responses: { 200: { description: 'Usage', schema: s.usageResponse } },
    handler: async ({ req, res }) => {
      const accountId = req.principal!.accountId;
      const [month, formCount, contact] = await Promise.all([
        submissions.monthUsage(accountId),
        forms.countForAccount(accountId),
        platform.accountContact(accountId),
      ]);
      const plan = contact?.plan ?? 'free';
      res.json({
        success: true,
        plan,
        forms: { used: formCount, limit: planFor(plan).maxForms },
        submissions: {
          month: month.month,
          used: month.used,
          limit: month.limit,
          resets_at: month.resetsAt.toISOString(),
        },
      });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/forms/:id',
    params: { id: pathId('The form') },
    summary: 'Read a form with its fields',
    description:
      "The form with its fields (each with its `id`, used as {fieldId}), state, messages, notification address and public submission URL. 404 when the form is not in the key's site (or the session's account).",
    tags,
    auth: 'apiKeyOrSession',
    errors: notFound,
    responses: { 200: { description: 'The form', schema: s.formResponse } },
    handler: async ({ req, res }) => {
      const row = await forms.get(scopeOf(req), formId(req));
      res.json({ success: true, form: await full(row) });
    },
  });

  registry.add(router, {
    method: 'put',
    path: '/api/v1/forms/:id',
    params: { id: pathId('The form') },
    summary: 'Change a form (any of its properties; `fields` replaces every field)',
    description:
      'A field sent in `fields` with the name of an existing field keeps that field’s id. The slug does not change with the name.',
    tags,
    auth: 'apiKeyOrSession',
    errors: [...editErrors, 'LIMIT_REACHED'],
    middleware: [body],
    body: s.updateFormBody,
    responses: { 200: { description: 'The form as changed', schema: s.formResponse } },
    handler: async ({ req, res, body }) => {
      const row = await forms.update(scopeOf(req), formId(req), body);
      res.json({ success: true, form: await full(row) });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/forms/:id',
    params: { id: pathId('The form') },
    summary: 'Delete a form and all its submissions (irreversible)',
    description:
      'Deletes the form, every submission it received and any notification mail still waiting to be sent. The submission URL then answers 404.',
    tags,
    auth: 'apiKeyOrSession',
    errors: notFound,
    responses: { 200: { description: 'Deleted', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const row = await forms.delete(scopeOf(req), formId(req));
      res.json({ success: true, message: `Form "${row.name}" and its submissions were deleted.` });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/forms/:id/toggle',
    params: { id: pathId('The form') },
    summary: 'Enable or disable a form (a disabled form refuses submissions)',
    description:
      'Flips `is_active`. A disabled form keeps its submissions; new submissions are refused with 403 until it is enabled again.',
    tags,
    auth: 'apiKeyOrSession',
    errors: notFound,
    responses: { 200: { description: 'The new state', schema: s.toggleResponse } },
    handler: async ({ req, res }) => {
      const row = await forms.toggle(scopeOf(req), formId(req));
      res.json({
        success: true,
        is_active: row.isActive,
        message: row.isActive
          ? 'Form enabled: it accepts submissions.'
          : 'Form disabled: new submissions are refused.',
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/forms/:id/fields',
    params: { id: pathId('The form') },
    summary: 'Add a field (at `position`, default last)',
    description:
      'Adds one field. `name` must be unique in the form (case-insensitive); a `select` needs `options`. A form holds at most 50 fields. The answer carries the new field (with its `id`) and the whole list.',
    tags,
    auth: 'apiKeyOrSession',
    errors: editErrors,
    middleware: [body],
    body: s.addFieldBody,
    responses: { 200: { description: 'The new field and the form’s fields', schema: s.fieldResponse } },
    handler: async ({ req, res, body }) => {
      const { form, field } = await forms.addField(scopeOf(req), formId(req), body);
      const position = form.fields.findIndex((f) => f.id === field.id);
      res.json({
        success: true,
        message: 'Field added.',
        field: fieldJson(field, position),
        fields: fieldsJson(form.fields),
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/forms/:id/fields/reorder',
    params: { id: pathId('The form') },
    summary: 'Put the fields in a new order (`field_ids`: every field id, once)',
    description:
      '`field_ids` must list every field id of the form exactly once; the fields take that order (their `position` follows).',
    tags,
    auth: 'apiKeyOrSession',
    errors: editErrors,
    middleware: [body],
    body: s.reorderBody,
    responses: { 200: { description: 'The fields in their new order', schema: s.fieldsResponse } },
    handler: async ({ req, res, body }) => {
      const form = await forms.reorder(scopeOf(req), formId(req), body.field_ids);
      res.json({ success: true, message: 'Fields reordered.', fields: fieldsJson(form.fields) });
    },
  });

  registry.add(router, {
    method: 'put',
    path: '/api/v1/forms/:id/fields/:fieldId',
    params: { id: pathId('The form'), fieldId: fieldIdParam },
    summary: 'Change a field (any of label, required, placeholder, options)',
    description:
      "Changes the named properties of one field; the others keep their values. `options` applies to `select` fields only. The field's name and type do not change (delete and add the field instead), so stored submissions keep their keys.",
    tags,
    auth: 'apiKeyOrSession',
    errors: editErrors,
    middleware: [body],
    body: s.updateFieldBody,
    responses: { 200: { description: 'The field as changed', schema: s.fieldResponse } },
    handler: async ({ req, res, body }) => {
      const { form, field } = await forms.updateField(
        scopeOf(req),
        formId(req),
        String(req.params.fieldId),
        body,
      );
      const position = form.fields.findIndex((f) => f.id === field.id);
      res.json({
        success: true,
        message: 'Field updated.',
        field: fieldJson(field, position),
        fields: fieldsJson(form.fields),
      });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/forms/:id/fields/:fieldId',
    params: { id: pathId('The form'), fieldId: fieldIdParam },
    summary: 'Delete a field (a form keeps at least one)',
    description: 'Values already submitted for the field stay in the stored submissions.',
    tags,
    auth: 'apiKeyOrSession',
    errors: editErrors,
    responses: { 200: { description: 'The remaining fields', schema: s.fieldsResponse } },
    handler: async ({ req, res }) => {
      const form = await forms.deleteField(scopeOf(req), formId(req), String(req.params.fieldId));
      res.json({ success: true, message: 'Field deleted.', fields: fieldsJson(form.fields) });
    },
  });

  const snippets = { html: htmlSnippet, react: reactSnippet, curl: curlSnippet } as const;
  for (const [kind, make] of Object.entries(snippets)) {
    registry.add(router, {
      method: 'get',
      path: `/api/v1/forms/:id/embed/${kind}`,
      params: { id: pathId('The form') },
      summary:
        kind === 'html'
          ? 'An HTML form to paste into a page of the site'
          : kind === 'react'
            ? 'A React component that renders and submits the form'
            : 'A shell command that posts a valid submission',
      description:
        'A snippet built from the form as it is now (fields, messages, submission URL); every value in it is escaped for its context. Get it again after changing the form.',
      tags,
      auth: 'apiKeyOrSession',
      errors: notFound,
      responses: { 200: { description: 'The snippet', schema: s.snippetResponse } },
      handler: async ({ req, res }) => {
        const row = await forms.get(scopeOf(req), formId(req));
        res.json({ success: true, snippet: make(snippetForm(row)) });
      },
    });
  }

  router.use(addressRoutes({ forms, addresses, registry }));
  router.use(submissionRoutes({ forms, submissions, registry }));
  return router;
}
