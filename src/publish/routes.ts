import { Router, type ErrorRequestHandler, type RequestHandler } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import type { RateLimiter } from '../ratelimit/index.js';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import {
  answerBodyTimeoutWith,
  bodyRefusal,
  FRAME_ANCESTORS_NONE,
  jsonBody,
  type RouteRegistry,
} from '../http/index.js';
import { AppError, errorBodySchema, isAppError, outageError } from '../errors/index.js';
import { dependencyUnavailableTotal, type Logger } from '../observability/index.js';
import { MAX_TEMP_HTML_BYTES, TEMP_PAGE_TTL_MS, type PublishService } from './service.js';

export const PUBLISH_RATE_LIMIT = { perMinute: 10 };

const required = { error: 'is required and must be a non-empty string' };
// Documented, checked by htmlProblem(): something besides whitespace, and no NUL character
// (PostgreSQL text cannot hold one).
const htmlRules = { pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$' };
const html = z
  .string(required)
  .min(1, required)
  .meta(htmlRules)
  .describe('A full HTML page, at most 1 MB (1048576 bytes), not only whitespace, without NUL characters');
const aiBody = z.object({ html });
const demoBody = z.object({
  html_content: html,
  title: z
    .string()
    .max(200)
    .refine((title) => !title.includes('\u0000'), 'must not contain NUL characters')
    .meta({ pattern: '^[^\\u0000]*$' })
    .optional()
    .describe('A title for the page (no NUL characters)'),
});

const aiResponse = z.object({ success: z.boolean(), url: z.url() });
const demoResponse = z.object({
  success: z.boolean(),
  url: z.url(),
  filename: z.string(),
  message: z.string(),
  expires_in: z.string(),
});
const aiError = z.object({ success: z.literal(false), error: z.string() });
const demoError = z.object({ success: z.literal(false), message: z.string(), error: z.string() });

type Shape = 'ai' | 'demo';

/** The error body of each publish endpoint (spec 4.1): never the generic `{error, message}`. */
function errorBody(shape: Shape, status: number, message: string) {
  if (shape === 'ai') return { success: false, error: message };
  const error =
    status === 429
      ? 'Too many requests'
      : status === 408
        ? 'Request timeout'
        : status === 503
          ? 'Service unavailable'
          : status >= 500
            ? 'Internal server error'
            : 'Invalid request';
  return { success: false, message, error };
}

/** Why `html` is unacceptable, or undefined when it is fine. */
function htmlProblem(html: string, field: string): string | undefined {
  if (html.trim() === '') return `${field} is required and must be a non-empty string`;
  if (html.includes('\u0000')) return `${field} must not contain NUL characters`;
  if (Buffer.byteLength(html, 'utf8') > MAX_TEMP_HTML_BYTES)
    return `${field} must be at most 1 MB (1048576 bytes)`;
  return undefined;
}

/**
 * Temporary pages are anonymous HTML on the API's origin, the console's: sandboxed so that their
 * scripts run (pages with JavaScript work) in an opaque origin (no cookie, storage or credentialed
 * call of the API's), and without what a phishing page needs: no form submission (no
 * `allow-forms`, and `form-action 'none'`), no pop-up, no dialog (`alert`, `prompt`), no
 * navigation of a framing page; and no site may frame them.
 */
export const TEMP_PAGE_CSP = `sandbox allow-scripts; form-action 'none'; ${FRAME_ANCESTORS_NONE}`;

const notFoundPage = `<!doctype html><html><head><meta charset="utf-8"><title>Page not found</title></head>
<body><h1>Page not found</h1><p>This temporary page does not exist or has expired (pages live for 60 minutes).</p></body></html>`;

/** Any failure on a publish endpoint (bad JSON, validation, a server error) answers in its own shape. */
function publishErrors(shape: Shape, field: string, logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) return void res.destroy();
    if (isAppError(err) && (err.status < 500 || err.code === 'CAPACITY')) {
      res.set(err.headers);
      return void res.status(err.status).json(errorBody(shape, err.status, err.message));
    }
    const refused = bodyRefusal(err);
    if (refused?.status === 413) {
      // Spec 4.1: an oversized page is a 400 like any other unacceptable html.
      return void res
        .status(400)
        .json(errorBody(shape, 400, `${field} must be at most 1 MB (1048576 bytes)`));
    }
    if (refused)
      return void res.status(refused.status).json(errorBody(shape, refused.status, refused.message));
    const outage = isAppError(err, 'DEPENDENCY_UNAVAILABLE') ? err : outageError(err);
    if (outage) {
      dependencyUnavailableTotal.inc({ dependency: outage.params.dependency });
      logger.warn({ reqId: req.id, cause: (err as Error).message }, outage.message);
      res.set(outage.headers);
      return void res.status(503).json(errorBody(shape, 503, outage.message));
    }
    logger.error({ err, reqId: req.id }, 'publish failed');
    res.status(500).json(errorBody(shape, 500, 'Publishing failed on our side; try again.'));
  };
}

export function publishRoutes(deps: {
  config: Config;
  publish: PublishService;
  limiter: RateLimiter;
  registry: RouteRegistry;
  logger: Logger;
}): Router {
  const { config, publish, registry, logger } = deps;
  const router = Router();
  const tags = ['Temporary publishing'];

  // One budget per client IP, shared by both publish endpoints and by every API replica.
  const limiter: RequestHandler = (req, res, next) => {
    // IPv6 clients count per /56 (one customer's block), as express-rate-limit does.
    deps.limiter.consume(ipKeyGenerator(req.ip ?? 'unknown', 56)).then((verdict) => {
      if (verdict.allowed) return next();
      const limited = new AppError('RATE_LIMITED', {
        message: 'Too many pages published from this address; try again in a minute.',
        retryAfterSeconds: verdict.retryAfterSeconds,
      });
      res.set(limited.headers);
      res
        .status(limited.status)
        .json(errorBody(req.path === '/ai/publish' ? 'ai' : 'demo', limited.status, limited.message));
    }, next);
  };
  const json = jsonBody('4mb');
  // A body too slow to arrive is answered 408 in each endpoint's own error shape too.
  const body: RequestHandler = (req, res, next) => {
    answerBodyTimeoutWith(req, (message) =>
      errorBody(req.path === '/ai/publish' ? 'ai' : 'demo', 408, message),
    );
    json(req, res, next);
  };

  const pageUrl = (id: string) => `${config.baseUrl}/demo/view/${id}`;
  const exampleUrl = 'http://localhost:8080/demo/view/q3Xr8vN2kLp0aZ7T';
  const limits =
    'No credential: anyone may publish. `html` is at most 1 MB (1048576 bytes) of UTF-8, not only ' +
    'whitespace, without NUL characters (PostgreSQL text cannot hold one). Each client address may ' +
    `publish ${PUBLISH_RATE_LIMIT.perMinute} pages a minute across both publish endpoints and every ` +
    'replica (429 with `Retry-After` beyond); the platform caps how many temporary pages and bytes ' +
    'are live at once (503 with `Retry-After` when full).';

  registry.add(router, {
    method: 'post',
    path: '/ai/publish',
    summary: 'Publish one HTML page for 60 minutes (no credential)',
    description:
      'Stores one HTML page and answers its address, `/demo/view/{id}`, where it is served for 60 ' +
      `minutes and then deleted. ${limits} Errors answer \`{success: false, error}\`.`,
    requestExample: {
      body: { html: '<!doctype html><html><head><title>Hi</title></head><body><h1>Hello</h1></body></html>' },
    },
    tags,
    auth: 'none',
    ownErrorBodies: true,
    middleware: [limiter, body],
    body: aiBody,
    responses: {
      200: {
        description: 'Published',
        schema: aiResponse,
        example: { success: true, url: exampleUrl },
      },
      400: {
        description: 'html missing, empty or over 1 MB, or the body is not JSON',
        schema: aiError,
        example: { success: false, error: 'html is required and must be a non-empty string' },
      },
      408: { description: 'The body stalled or arrived below the minimum rate', schema: aiError },
      415: { description: 'The body is not UTF-8 JSON', schema: aiError },
      429: {
        description: 'Rate limited (see Retry-After)',
        schema: aiError,
        example: {
          success: false,
          error: 'Too many pages published from this address; try again in a minute.',
        },
      },
      503: {
        description:
          'Publishing is at its platform-wide capacity, or the database is unreachable (see Retry-After)',
        schema: aiError,
      },
      500: { description: 'Publishing failed', schema: aiError },
    },
    handler: async ({ res, body }) => {
      const problem = htmlProblem(body.html, 'html');
      if (problem) return void res.status(400).json(errorBody('ai', 400, problem));
      const page = await publish.publish(body.html);
      res.json({ success: true, url: pageUrl(page.id) });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/demo/api/publish',
    summary: 'Publish one HTML page for 60 minutes',
    description:
      'Stores one HTML page, with an optional `title` (at most 200 characters), and answers its ' +
      'address, `/demo/view/{id}`, where it is served for 60 minutes and then deleted. ' +
      `${limits} Errors answer \`{success: false, message, error}\`.`,
    requestExample: {
      body: { html_content: '<!doctype html><html><body><h1>Hello</h1></body></html>', title: 'Hello' },
    },
    tags,
    auth: 'none',
    ownErrorBodies: true,
    middleware: [limiter, body],
    body: demoBody,
    responses: {
      200: {
        description: 'Published',
        schema: demoResponse,
        example: {
          success: true,
          url: exampleUrl,
          filename: 'q3Xr8vN2kLp0aZ7T.html',
          message: 'Page published. It will be deleted after 60 minutes.',
          expires_in: '60 minutes',
        },
      },
      400: {
        description: 'html_content missing, empty or over 1 MB, or the body is not JSON',
        schema: demoError,
        example: {
          success: false,
          message: 'html_content is required and must be a non-empty string',
          error: 'Invalid request',
        },
      },
      408: { description: 'The body stalled or arrived below the minimum rate', schema: demoError },
      415: { description: 'The body is not UTF-8 JSON', schema: demoError },
      429: { description: 'Rate limited (see Retry-After)', schema: demoError },
      503: {
        description:
          'Publishing is at its platform-wide capacity, or the database is unreachable (see Retry-After)',
        schema: demoError,
      },
      500: { description: 'Publishing failed', schema: demoError },
    },
    handler: async ({ res, body }) => {
      const problem = htmlProblem(body.html_content, 'html_content');
      if (problem) return void res.status(400).json(errorBody('demo', 400, problem));
      const page = await publish.publish(body.html_content, body.title);
      res.json({
        success: true,
        url: pageUrl(page.id),
        filename: `${page.id}.html`,
        message: 'Page published. It will be deleted after 60 minutes.',
        expires_in: `${TEMP_PAGE_TTL_MS / 60_000} minutes`,
      });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/demo/view/:id',
    summary: 'A published temporary page',
    description:
      'Serves a page published with `POST /ai/publish` or `POST /demo/api/publish` as `text/html` ' +
      'until it expires (60 minutes after publication), then a 404 page. The page runs sandboxed ' +
      "(`Content-Security-Policy: sandbox allow-scripts; form-action 'none'; frame-ancestors 'none'`): " +
      'its scripts run in an opaque origin, never the API’s; it cannot submit forms, open pop-ups or ' +
      'dialogs, and no other site can frame it. Not cached (`Cache-Control: no-store`) nor indexed ' +
      '(`X-Robots-Tag: noindex`, on its 404 too).',
    requestExample: { params: { id: 'q3Xr8vN2kLp0aZ7T' } },
    tags,
    auth: 'none',
    ownErrorBodies: true,
    responses: {
      200: {
        description: 'The page',
        contentType: 'text/html',
        example: '<!doctype html><html><body><h1>Hello</h1></body></html>',
      },
      404: { description: 'No such page, or expired', contentType: 'text/html' },
      503: {
        description: 'The database is unreachable for now (see Retry-After)',
        schema: errorBodySchema('DEPENDENCY_UNAVAILABLE', z),
      },
    },
    handler: async ({ req, res }) => {
      const html = await publish.view(String(req.params.id));
      res.set('Cache-Control', 'no-store');
      // A temporary page is for whoever was sent its link: search engines keep none, nor its 404.
      res.set('X-Robots-Tag', 'noindex');
      res.set('Content-Security-Policy', TEMP_PAGE_CSP);
      res.set('X-Content-Type-Options', 'nosniff');
      if (html === undefined) return void res.status(404).type('html').send(notFoundPage);
      res.type('html').send(html);
    },
  });

  router.use('/ai/publish', publishErrors('ai', 'html', logger));
  router.use('/demo/api/publish', publishErrors('demo', 'html_content', logger));
  return router;
}
