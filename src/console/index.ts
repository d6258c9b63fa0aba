import { existsSync, statSync } from 'node:fs';
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

/** The encodings built beside each JS and CSS asset (scripts/build-console.mjs), best first. */
const VARIANTS = [
  { encoding: 'br', suffix: '.br' },
  { encoding: 'gzip', suffix: '.gz' },
] as const;
type Encoding = (typeof VARIANTS)[number]['encoding'];
const COMPRESSIBLE = /\.(js|css)$/;
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * The codings an Accept-Encoding header allows, with their weights (RFC 9110 12.5.3): `*` stands
 * for any coding not named, `q=0` refuses one. No header: identity only (a client that says
 * nothing may not decode anything).
 */
export function acceptedEncodings(header: string | undefined): Map<string, number> {
  const weights = new Map<string, number>();
  for (const part of (header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    let q = 1;
    for (const param of params) {
      const [key, value] = param.trim().split('=');
      if (key === 'q' && value !== undefined) q = Number(value);
    }
    weights.set(name, Number.isFinite(q) ? q : 0);
  }
  return weights;
}

/** The precompressed coding to send: the highest weight of those built, brotli on a tie; none: identity. */
export function pickEncoding(header: string | undefined, built: ReadonlySet<Encoding>): Encoding | undefined {
  const weights = acceptedEncodings(header);
  let best: { encoding: Encoding; q: number } | undefined;
  for (const { encoding } of VARIANTS) {
    if (!built.has(encoding)) continue;
    const q = weights.get(encoding) ?? weights.get('*') ?? 0;
    if (q > 0 && (!best || q > best.q)) best = { encoding, q };
  }
  return best?.encoding;
}

export function consoleRoutes({ isApiHost, dir = consoleDir() }: ConsoleOptions): Router {
  const router = Router();
  const index = path.join(dir, 'index.html');
  const assets = path.join(dir, 'assets');
  const immutable = 'public, max-age=31536000, immutable';
  /** Which variants exist per asset, looked up once (the build never changes under a running server). */
  const variantsOf = new Map<string, Set<Encoding>>();
  const builtVariants = (file: string) => {
    let built = variantsOf.get(file);
    if (!built) {
      built = new Set(
        VARIANTS.filter(({ suffix }) => statSync(file + suffix, { throwIfNoEntry: false })?.isFile()).map(
          (v) => v.encoding,
        ),
      );
      variantsOf.set(file, built);
    }
    return built;
  };
  router.use('/console', (req, _res, next) => next(isApiHost(req) ? undefined : 'router'));
  // The variants are representations of an asset, never assets of their own.
  router.use('/console/assets', (req, _res, next) =>
    next(/\.(br|gz)$/.test(req.path) ? 'router' : undefined),
  );
  router.use('/console/assets', (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const name = req.path.slice(1);
    if (!COMPRESSIBLE.test(name) || name.includes('/') || name.includes('..')) return next();
    const file = path.join(assets, name);
    if (!statSync(file, { throwIfNoEntry: false })?.isFile()) return next();
    res.vary('Accept-Encoding');
    const encoding = pickEncoding(req.get('accept-encoding'), builtVariants(file));
    if (!encoding) return next();
    const suffix = VARIANTS.find((v) => v.encoding === encoding)!.suffix;
    res.set({
      'Content-Type': TYPES[path.extname(name)]!,
      'Content-Encoding': encoding,
      'Cache-Control': immutable,
      'X-Content-Type-Options': 'nosniff',
    });
    // sendFile answers Content-Length, a weak ETag of the variant's own size and time (so each
    // representation has its own validator), Last-Modified, 304 to a matching If-None-Match.
    res.sendFile(file + suffix, { cacheControl: false, dotfiles: 'deny' }, (err) => err && next(err));
  });
  router.use(
    '/console/assets',
    express.static(assets, {
      immutable: true,
      maxAge: '365d',
      index: false,
      setHeaders: (res, file) => {
        res.set('X-Content-Type-Options', 'nosniff');
        if (COMPRESSIBLE.test(file)) res.vary('Accept-Encoding');
      },
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
