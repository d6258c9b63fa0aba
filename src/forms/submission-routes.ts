import { Router, type Request } from 'express';
import { stringify } from 'csv-stringify';
import type { ErrorCode } from '../errors/index.js';
import { jsonBody, paginationJson, parseOrThrow, pathId, type RouteRegistry } from '../http/index.js';
import { formRefJson, submissionDetailJson, submissionJson } from './format.js';
import * as s from './schemas.js';
import { submissionUuidParam } from './schemas.js';
import type { FormScope, FormsService } from './service.js';
import type { SubmissionFilters, Submissions } from './submissions.js';

/** A key sees its own site's forms; a session sees every form of its account. */
export function scopeOf(req: Request): FormScope {
  const principal = req.principal!;
  return principal.siteId !== undefined ? { siteId: principal.siteId } : { accountId: principal.accountId };
}

export function formId(req: Request): number {
  return parseOrThrow(s.formIdParam, req.params, 'path').id;
}

function filtersOf(q: {
  is_spam?: boolean;
  is_archived?: boolean;
  is_read?: boolean;
  from_date?: string;
  to_date?: string;
}): SubmissionFilters {
  return {
    isSpam: q.is_spam,
    isArchived: q.is_archived,
    isRead: q.is_read,
    from: q.from_date ? new Date(q.from_date) : undefined,
    to: q.to_date ? new Date(q.to_date) : undefined,
  };
}

/** CSV cells that a spreadsheet would run as a formula are prefixed with `'` (OWASP CSV injection). */
function csvSafe(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

/** The owner's view of a form's submissions: list with stats, one, marks, delete, CSV export. */
export function submissionRoutes(deps: {
  forms: FormsService;
  submissions: Submissions;
  registry: RouteRegistry;
}): Router {
  const { forms, submissions, registry } = deps;
  const router = Router();
  const submissionTags = ['Form submissions'];
  const body = jsonBody('256kb');
  const notFound: ErrorCode[] = ['NOT_FOUND'];

  registry.add(router, {
    method: 'get',
    path: '/api/v1/forms/:id/submissions',
    params: { id: pathId('The form') },
    summary: 'List submissions (newest first) with filters and statistics',
    description:
      'Filters combine. `stats` counts all the form’s submissions regardless of filters: `unread` is neither read nor spam, `legitimate` is not spam. Reading does not mark anything read.',
    tags: submissionTags,
    auth: 'apiKeyOrSession',
    errors: notFound,
    query: s.submissionsQuery,
    responses: { 200: { description: 'One page of submissions', schema: s.submissionsResponse } },
    handler: async ({ req, res, query }) => {
      const form = await forms.get(scopeOf(req), formId(req));
      const [{ rows, total }, stats] = await Promise.all([
        submissions.list(form.id, filtersOf(query), query.page, query.per_page),
        submissions.stats(form.id),
      ]);
      res.json({
        success: true,
        form: formRefJson(form),
        submissions: rows.map(submissionJson),
        pagination: paginationJson(query.page, query.per_page, total),
        stats,
      });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/forms/:id/submissions/export',
    params: { id: pathId('The form') },
    summary: 'Download submissions as CSV (streamed; same filters as the list)',
    description:
      "A CSV file with a header row: `submitted_at`, `uuid`, one column per current field (by name), then `is_spam`, `spam_score`, `is_read`, `is_archived`. Values that a spreadsheet would run as a formula are prefixed with `'`. Streamed, so any number of rows can be exported.",
    tags: submissionTags,
    auth: 'apiKeyOrSession',
    errors: notFound,
    query: s.exportQuery,
    responses: {
      200: { description: 'CSV, one row per submission, one column per field', contentType: 'text/csv' },
    },
    handler: async ({ req, res, query }) => {
      const form = await forms.get(scopeOf(req), formId(req));
      res.set('Content-Type', 'text/csv; charset=utf-8');
      res.set('Content-Disposition', `attachment; filename="${form.slug}-submissions.csv"`);
      const header = [
        'submitted_at',
        'uuid',
        ...form.fields.map((f) => f.name),
        'is_spam',
        'spam_score',
        'is_read',
        'is_archived',
      ];
      const csv = stringify({ header: true, columns: header });
      csv.pipe(res);
      try {
        for await (const row of submissions.each(form.id, filtersOf(query))) {
          const record = [
            row.submittedAt.toISOString(),
            row.uuid,
            ...form.fields.map((f) => csvSafe(row.data[f.name] ?? '')),
            String(row.isSpam),
            String(row.spamScore),
            String(row.isRead),
            String(row.isArchived),
          ];
          if (!csv.write(record)) await new Promise((resolve) => csv.once('drain', resolve));
        }
        csv.end();
      } catch (err) {
        // Headers are sent: the client sees a cut stream rather than a misleading complete file.
        csv.destroy(err as Error);
        res.destroy();
      }
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/forms/:id/submissions/:uuid',
    params: { id: pathId('The form'), uuid: submissionUuidParam },
    summary: 'Read one submission with its metadata and spam reasons',
    description:
      'The submission with its metadata (the client address as a keyed one-way hash, user agent, referer, origin) and the reasons of its spam score. Reading it does not mark it read: use PATCH.',
    tags: submissionTags,
    auth: 'apiKeyOrSession',
    errors: notFound,
    responses: { 200: { description: 'The submission', schema: s.submissionResponse } },
    handler: async ({ req, res }) => {
      const form = await forms.get(scopeOf(req), formId(req));
      const row = await submissions.get(form.id, String(req.params.uuid));
      res.json({ success: true, form: formRefJson(form), submission: submissionDetailJson(row) });
    },
  });

  registry.add(router, {
    method: 'patch',
    path: '/api/v1/forms/:id/submissions/:uuid',
    params: { id: pathId('The form'), uuid: submissionUuidParam },
    summary: 'Mark a submission read/unread, spam/not spam, archived/unarchived',
    description: 'Marking it read sets `read_at` (kept on later reads); marking it unread clears it.',
    tags: submissionTags,
    auth: 'apiKeyOrSession',
    errors: notFound,
    middleware: [body],
    body: s.updateSubmissionBody,
    responses: { 200: { description: 'The submission as changed', schema: s.submissionResponse } },
    handler: async ({ req, res, body }) => {
      const form = await forms.get(scopeOf(req), formId(req));
      const row = await submissions.update(form.id, String(req.params.uuid), body);
      res.json({ success: true, form: formRefJson(form), submission: submissionDetailJson(row) });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/forms/:id/submissions/:uuid',
    params: { id: pathId('The form'), uuid: submissionUuidParam },
    summary: 'Delete a submission (irreversible)',
    description:
      "Deletes one submission and lowers the form's `submission_count`. The month's usage counter is not given back.",
    tags: submissionTags,
    auth: 'apiKeyOrSession',
    errors: notFound,
    responses: { 200: { description: 'Deleted', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const form = await forms.get(scopeOf(req), formId(req));
      await submissions.delete(form.id, String(req.params.uuid));
      res.json({ success: true, message: 'Submission deleted.' });
    },
  });

  return router;
}
