import express, {
  Router,
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import {
  bodyRefusal,
  hostOrigin,
  jsonBody,
  matchedOrigin,
  toAppError,
  type RouteRegistry,
} from '../http/index.js';
import type { Logger } from '../observability/index.js';
import type { Platform } from '../platform/index.js';
import type { RateLimiter } from '../ratelimit/index.js';
import { DEFAULT_SUCCESS_MESSAGE, escapeHtml } from './embed-common.js';
import * as s from './schemas.js';
import type { FormsService } from './service.js';
import { submissionsTotal } from './metrics.js';
import type { Submissions } from './submissions.js';
import type { FormRow } from './tables.js';

/** Per client address (IPv6 per /56), across every form and every API replica. */
export const SUBMIT_RATE_LIMIT = { perMinute: 20 };
/** Largest submission body accepted (50 fields of 1,000 characters and a 10,000-character message fit). */
export const MAX_SUBMISSION_BODY = '128kb';

const submitBody = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))
  .describe(
    'One key per field name holding the value, plus `_t_trap` (the honeypot: empty) and `_t_start` (Unix seconds at which the form was shown); a post with neither did not come from the embedded form and is scored as spam. Keys that name no field are ignored. Also accepted as application/x-www-form-urlencoded.',
  );

/**
 * The public submission endpoint `POST /f/<uuid>` (spec 4.7): JSON from scripts, or a plain form
 * post from a browser with JavaScript off (answered with a redirect or a small page). CORS is
 * granted to the account's own sites only; a browser on another origin is refused.
 */
export function publicFormRoutes(deps: {
  config: Config;
  platform: Platform;
  forms: FormsService;
  submissions: Submissions;
  limiter: RateLimiter;
  registry: RouteRegistry;
  logger: Logger;
}): Router {
  const { config, platform, forms, submissions, registry } = deps;
  const router = Router();
  const apiOrigin = new URL(config.baseUrl).origin;

  /** The origins of the account's sites and custom domains, and the API's own, as browsers send them. */
  const allowedOrigins = async (form: FormRow): Promise<string[]> => [
    apiOrigin,
    ...(await platform.accountHosts(form.accountId, config.sitesDomain)).map((host) =>
      hostOrigin(config.baseUrl, host),
    ),
  ];

  const loadForm = async (req: Request): Promise<FormRow> => {
    const form = await forms.byUuid(String(req.params.uuid));
    if (!form) throw new AppError('NOT_FOUND', { message: 'This form does not exist.' });
    return form;
  };

  /** No Origin (curl, a server) passes without CORS; else it must equal an allowed origin (spec 5.6's rule). */
  const cors = async (req: Request, res: Response, form: FormRow): Promise<boolean> => {
    res.vary('Origin');
    const sent = req.get('origin');
    if (sent === undefined) return true;
    const origin = matchedOrigin(sent, await allowedOrigins(form));
    if (origin === undefined) return false;
    res.set('Access-Control-Allow-Origin', origin);
    return true;
  };

  router.options('/f/:uuid', async (req, res, next) => {
    try {
      const form = await loadForm(req);
      if (await cors(req, res, form)) {
        res.set('Access-Control-Allow-Methods', 'POST');
        res.set('Access-Control-Allow-Headers', 'Content-Type, Accept');
        res.set('Access-Control-Max-Age', '600');
      }
      res.set('Allow', 'POST, OPTIONS').status(204).end();
    } catch (err) {
      next(err);
    }
  });

  const limiter: RequestHandler = (req, _res, next) => {
    deps.limiter.consume(ipKeyGenerator(req.ip ?? 'unknown', 56)).then((verdict) => {
      if (verdict.allowed) return next();
      next(
        new AppError('RATE_LIMITED', {
          message: 'Too many submissions from this address; try again in a minute.',
          retryAfterSeconds: verdict.retryAfterSeconds,
        }),
      );
    }, next);
  };

  // JSON or a plain form post; anything else is refused before it is read.
  const json = jsonBody(MAX_SUBMISSION_BODY);
  const urlencoded = express.urlencoded({ extended: false, limit: MAX_SUBMISSION_BODY, parameterLimit: 200 });
  const parseBody: RequestHandler = (req, res, next) => {
    if (req.is('application/x-www-form-urlencoded')) return urlencoded(req, res, next);
    if (!req.is('application/json') && req.get('content-type'))
      return next(
        new AppError('UNSUPPORTED_MEDIA_TYPE', {
          message: 'Send the submission as application/json or application/x-www-form-urlencoded.',
        }),
      );
    json(req, res, next);
  };

  registry.add(router, {
    method: 'post',
    path: '/f/:uuid',
    summary: 'Submit a form (public: no credential)',
    description:
      'Validates the values against the form’s fields, scores the submission for spam (score 70 or more is spam: stored in the spam bin, not mailed, not counted against the plan), stores it and mails the form’s notification address. ' +
      'JSON callers get JSON; a plain form post (application/x-www-form-urlencoded, JavaScript off) is answered with a 303 redirect to the form’s `redirect_url`, or a small HTML page showing its `success_message`. ' +
      `Browsers may call it from the account’s sites and custom domains only (CORS, preflight included). Rate limit: ${SUBMIT_RATE_LIMIT.perMinute} per minute per client address. ` +
      'A spam submission gets the same answer as any other, so a bot learns nothing.',
    tags: ['Form submissions'],
    auth: 'none',
    errors: [
      'NOT_FOUND',
      'FORM_INACTIVE',
      'ORIGIN_NOT_ALLOWED',
      'SUBMISSION_INVALID',
      'SUBMISSION_LIMIT',
      'RATE_LIMITED',
      'PAYLOAD_TOO_LARGE',
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    middleware: [limiter, parseBody],
    body: submitBody,
    responses: {
      201: { description: 'Stored (and mailed unless spam)', schema: s.submitAccepted },
      303: { description: 'A plain form post with a `redirect_url`: go there' },
    },
    handler: async ({ req, res, body }) => {
      const form = await loadForm(req);
      if (!(await cors(req, res, form))) throw new AppError('ORIGIN_NOT_ALLOWED');
      await submissions.submit(form, {
        body,
        ip: req.ip ?? 'unknown',
        userAgent: req.get('user-agent'),
        referer: req.get('referer'),
        origin: req.get('origin'),
      });
      const message = form.successMessage ?? DEFAULT_SUCCESS_MESSAGE;
      if (!wantsHtml(req)) return void res.status(201).json({ success: true, message });
      if (form.redirectUrl) return void res.redirect(303, form.redirectUrl);
      res
        .status(200)
        .type('html')
        .send(page('Thank you', message, req.get('referer')));
    },
  });

  // Plain form posts see their error as a page; JSON callers get the registry body (next handler).
  const errors: ErrorRequestHandler = (err, req, res, next) => {
    const known = bodyRefusal(err) ?? toAppError(err);
    if (known.status < 500) {
      submissionsTotal.inc({
        result: known.code === 'SUBMISSION_LIMIT' || known.code === 'RATE_LIMITED' ? 'limited' : 'rejected',
      });
    }
    if (res.headersSent || !wantsHtml(req)) return next(known);
    res.set(known.headers);
    res
      .status(known.status)
      .type('html')
      .send(page('The form could not be sent', known.message, req.get('referer')));
  };
  router.use('/f/:uuid', errors);
  return router;
}

/** A browser's plain form post (not fetch asking for JSON). */
function wantsHtml(req: Request): boolean {
  return Boolean(req.is('application/x-www-form-urlencoded')) && req.accepts(['json', 'html']) === 'html';
}

function page(title: string, message: string, back: string | undefined): string {
  const link = back && /^https?:\/\//i.test(back) ? `<p><a href="${escapeHtml(back)}">Back</a></p>` : '';
  return `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head><body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>${link}</body></html>`;
}
