import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router, type Request, type Response } from 'express';

/**
 * The console: a static app (console/src, built into dist/console by `npm run build`) served by
 * the API host at /console. Every path below /console that is not an asset answers index.html,
 * so a mailed link (/console/reset#token=…) or a reload lands in the app, which routes itself.
 * The app calls only the public and account APIs on this same origin.
 */

/** dist/console from this file, whether it runs from src/ (tests) or dist/src/ (the build). */
export function consoleDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'dist', 'console');
    const parent = path.dirname(dir);
    if (parent === dir) return path.resolve('dist', 'console');
    dir = parent;
  }
}

// Same-origin only, no inline script or style: an injected string cannot run, and nothing is
// fetched from another host.
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export interface ConsoleOptions {
  /** Whether the request is for the API's own host (the console is never served on a site's host). */
  isApiHost(req: Request): boolean;
  dir?: string;
}

export function consoleRoutes({ isApiHost, dir = consoleDir() }: ConsoleOptions): Router {
  const router = Router();
  const index = path.join(dir, 'index.html');
  router.use('/console', (req, _res, next) => next(isApiHost(req) ? undefined : 'router'));
  router.use(
    '/console/assets',
    express.static(path.join(dir, 'assets'), {
      immutable: true,
      maxAge: '365d',
      index: false,
      setHeaders: (res) => void res.set('X-Content-Type-Options', 'nosniff'),
    }),
  );
  // A missing asset is the API's 404, not the app's page.
  router.use('/console/assets', (_req, _res, next) => next('router'));
  const page = (_req: Request, res: Response) => {
    if (!existsSync(index)) {
      res.status(503).type('text').send('The console is not built: run `npm run build` (or `make build`).');
      return;
    }
    res.set({
      'Content-Security-Policy': CSP,
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
    });
    res.sendFile(index);
  };
  router.get('/console', page);
  router.get('/console/{*rest}', page);
  return router;
}
