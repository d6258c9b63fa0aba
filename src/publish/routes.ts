import { Router, type Request, type Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import { z } from 'zod';
import type { Config } from '../config/config.js';
import { jsonBody } from '../http/body.js';
import type { RouteRegistry } from '../http/route.js';
import { MAX_TEMP_HTML_BYTES, TEMP_PAGE_TTL_MS, type PublishService } from './publish-service.js';

export const PUBLISH_RATE_LIMIT = { perMinute: 10 };

const aiBody = z.object({ html: z.unknown() });
const demoBody = z.object({ html_content: z.unknown(), title: z.unknown().optional() });

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

/** Why `html` is unacceptable, or undefined when it is fine. */
function htmlProblem(html: unknown, field: string): string | undefined {
  if (typeof html !== 'string' || html.trim() === '')
    return `${field} is required and must be a non-empty string`;
  if (Buffer.byteLength(html, 'utf8') > MAX_TEMP_HTML_BYTES)
    return `${field} must be at most 1 MB (1048576 bytes)`;
  return undefined;
}

const notFoundPage = `<!doctype html><html><head><meta charset="utf-8"><title>Page not found</title></head>
<body><h1>Page not found</h1><p>This temporary page does not exist or has expired (pages live for 60 minutes).</p></body></html>`;

export function publishRoutes(deps: {
  config: Config;
  publish: PublishService;
  registry: RouteRegistry;
}): Router {
  const { config, publish, registry } = deps;
  const router = Router();
  const tags = ['Temporary publishing'];

  const limiter = (shape: 'ai' | 'demo') =>
    rateLimit({
      windowMs: 60_000,
      limit: PUBLISH_RATE_LIMIT.perMinute,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      handler: (_req, res) => {
        const error = 'Too many pages published from this address; try again in a minute.';
        res
          .status(429)
          .json(
            shape === 'ai'
              ? { success: false, error }
              : { success: false, message: error, error: 'Too many requests' },
          );
      },
    });
  const body = (shape: 'ai' | 'demo') => {
    const parse = jsonBody('4mb');
    return (req: Request, res: Response, next: (err?: unknown) => void) =>
      parse(req, res, (err?: unknown) => {
        if (!err) return next();
        const type = (err as { type?: string }).type;
        const error =
          type === 'entity.too.large'
            ? 'html must be at most 1 MB (1048576 bytes)'
            : 'Request body must be valid JSON';
        if (shape === 'ai') return res.status(400).json({ success: false, error });
        return res.status(400).json({ success: false, message: error, error: 'Bad Request' });
      });
  };

  const pageUrl = (id: string) => `${config.baseUrl}/demo/view/${id}`;

  registry.add(router, {
    method: 'post',
    path: '/ai/publish',
    summary: 'Publish one HTML page for 60 minutes (no credential)',
    tags,
    auth: 'none',
    middleware: [limiter('ai'), body('ai')],
    body: aiBody.meta({ description: 'html: a full HTML page (required, at most 1 MB)' }),
    responses: {
      200: { description: 'Published', schema: aiResponse },
      400: { description: 'html missing, empty or over 1 MB', schema: aiError },
      429: { description: 'Rate limited', schema: aiError },
    },
    handler: async ({ res, body }) => {
      const problem = htmlProblem(body.html, 'html');
      if (problem) return void res.status(400).json({ success: false, error: problem });
      const page = await publish.publish(body.html as string);
      res.json({ success: true, url: pageUrl(page.id) });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/demo/api/publish',
    summary: 'Publish one HTML page for 60 minutes',
    tags,
    auth: 'none',
    middleware: [limiter('demo'), body('demo')],
    body: demoBody.meta({ description: 'html_content (required, at most 1 MB), title (optional)' }),
    responses: {
      200: { description: 'Published', schema: demoResponse },
      400: { description: 'html_content missing, empty or over 1 MB', schema: demoError },
      429: { description: 'Rate limited', schema: demoError },
    },
    handler: async ({ res, body }) => {
      const problem = htmlProblem(body.html_content, 'html_content');
      if (problem)
        return void res.status(400).json({ success: false, message: problem, error: 'Invalid request' });
      if (body.title !== undefined && (typeof body.title !== 'string' || body.title.length > 200)) {
        const message = 'title must be a string of at most 200 characters';
        return void res.status(400).json({ success: false, message, error: 'Invalid request' });
      }
      const page = await publish.publish(body.html_content as string, body.title as string | undefined);
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
    tags,
    auth: 'none',
    responses: {
      200: { description: 'The page', contentType: 'text/html' },
      404: { description: 'No such page, or expired', contentType: 'text/html' },
    },
    handler: async ({ req, res }) => {
      const html = await publish.view(String(req.params.id));
      res.set('Cache-Control', 'no-store');
      // The page is untrusted HTML on the API's origin: sandbox it so its scripts get an opaque origin.
      res.set('Content-Security-Policy', 'sandbox allow-scripts allow-forms allow-popups allow-modals');
      res.set('X-Content-Type-Options', 'nosniff');
      if (html === undefined) return void res.status(404).type('html').send(notFoundPage);
      res.type('html').send(html);
    },
  });

  return router;
}
