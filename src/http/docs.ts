import { createRequire } from 'node:module';
import path from 'node:path';
import express, { Router } from 'express';
import { FRAME_ANCESTORS_NONE } from './framing.js';

// swagger-ui-dist ships the reference's assets; they are served from node_modules, never a CDN.
const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png']);

const page = (title: string, head: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>${head}</head><body>${body}</body></html>`;

const landing = page(
  'Hostplane API',
  '<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}code{background:#f3f3f3;padding:0 .25em}</style>',
  `<h1>Hostplane API</h1>
<p>Static sites, files, folders, videos, storage quotas, temporary publishing, forms with their submissions and notification mail, and per-site SQLite databases with end-user accounts, over HTTP.</p>
<ul>
<li><a href="/console">Console</a> (sign in to manage your sites, forms and databases)</li>
<li><a href="/docs">API reference</a> (rendered from the OpenAPI document)</li>
<li><a href="/api/v1/openapi.json">OpenAPI document</a> (<code>/api/v1/openapi.json</code>)</li>
</ul>
<p>Authenticate with <code>X-API-Key: &lt;site key&gt;</code>, or <code>Authorization: Bearer &lt;session&gt;</code> where a route says so.</p>`,
);

const reference = page(
  'Hostplane API reference',
  '<link rel="stylesheet" href="/docs/assets/swagger-ui.css"><link rel="icon" href="/docs/assets/favicon-32x32.png">',
  '<div id="reference"></div><script src="/docs/assets/swagger-ui-bundle.js"></script><script src="/docs/init.js"></script>',
);

const init = `window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#reference',
  deepLinking: true,
  tryItOutEnabled: false,
});
`;

/** The API host's human pages: `/` names the service, `/docs` renders the OpenAPI document. */
export function docsRoutes(isApiHost: (req: express.Request) => boolean): Router {
  const router = Router();
  // Only on the API's own host (or an IP / localhost): a hostname that is nobody's site any more
  // (a removed custom domain) must keep answering 404, not the API's landing page.
  router.use((req, _res, next) => next(isApiHost(req) ? undefined : 'router'));
  const html = (body: string) => (_req: express.Request, res: express.Response) =>
    void res
      .type('html')
      .set(
        'Content-Security-Policy',
        `default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; base-uri 'none'; ${FRAME_ANCESTORS_NONE}`,
      )
      .send(body);
  router.get('/', html(landing));
  router.get('/docs', html(reference));
  router.get('/docs/init.js', (_req, res) => void res.type('js').send(init));
  router.get('/docs/assets/:file', (req, res, next) => {
    if (!ASSETS.has(req.params.file)) return next();
    res.sendFile(req.params.file, { root: swaggerDir, maxAge: '1d' });
  });
  return router;
}
