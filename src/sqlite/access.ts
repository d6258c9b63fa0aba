import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { matchedOrigin, originHost } from '../http/index.js';
import type { Grant, TokenGrants } from './grants.js';
import type { SiteHosts } from './site-hosts.js';
import type { SignedIn, UserPools } from './users.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** The scoped token behind `X-Sqlite-Token`, set by `scopedToken` (or the fast path's gate). */
    sqlite?: Grant;
  }
}

export const SQLITE_HEADERS = ['X-Sqlite-Token', 'X-Sqlite-User-Token', 'X-API-Key', 'Content-Type'];

/** The grant of a request that passed `scopedToken`. */
export function grantOf(req: Request): Grant {
  if (!req.sqlite) throw new AppError('SQLITE_TOKEN_INVALID');
  return req.sqlite;
}

/**
 * Admits a call with a scoped token, wherever it arrives (the fast path's gate, the Express
 * routes) and before anything else, the hop to the owning shard included: the token must be
 * valid (401) and the request's `Origin` one of the site's origins, exactly as serialised (403,
 * spec 5.6). That origin is granted CORS on the answer. The API's own origin is accepted too:
 * the API host serves only first-party pages (the docs and the owner's console, which browses
 * and queries the site's databases with tokens it mints), never a tenant's page.
 */
export function admitScoped(grants: TokenGrants, req: IncomingMessage, res: ServerResponse): Promise<Grant> {
  const token = req.headers['x-sqlite-token'];
  return grants
    .resolve(typeof token === 'string' ? token : undefined)
    .then((grant) => admitOrigin(grants, req, res, grant));
}

/**
 * `admitScoped` without a promise when the token's grant is in memory (the fast path's gate):
 * the grant, or undefined when it has to be loaded (then `admitScoped`); a refusal is thrown.
 */
export function admitScopedNow(
  grants: TokenGrants,
  req: IncomingMessage,
  res: ServerResponse,
): Grant | undefined {
  const token = req.headers['x-sqlite-token'];
  const grant = grants.cached(typeof token === 'string' ? token : undefined);
  return grant && admitOrigin(grants, req, res, grant);
}

/** The Origin check of a call whose token is valid (see admitScoped). */
function admitOrigin(grants: TokenGrants, req: IncomingMessage, res: ServerResponse, grant: Grant): Grant {
  res.setHeader('Vary', 'Origin');
  if (req.headers.origin === undefined && firstPartySameOrigin(req)) return grant;
  const origin =
    matchedOrigin(req.headers.origin, grant.origins) ?? matchedOrigin(req.headers.origin, [grants.apiOrigin]);
  if (origin === undefined)
    throw new AppError('SQLITE_FORBIDDEN', { message: 'Request Origin is not permitted for this token.' });
  res.setHeader('Access-Control-Allow-Origin', origin);
  return grant;
}

/**
 * A browser's same-origin GET carries no `Origin` (Fetch standard), but it does carry
 * `Sec-Fetch-Site: same-origin`, a header no page can set. Same-origin to the API means a page of
 * the API's own host — the console — since site hosts never reach these routes (the edge takes
 * them first; in the cluster their Ingress goes to the edge): the same first party the API's
 * origin stands for above. A client outside a browser can claim either header alike, as it can
 * any Origin; the check guards against other sites' pages, not against such clients.
 */
function firstPartySameOrigin(req: IncomingMessage): boolean {
  return req.headers['sec-fetch-site'] === 'same-origin';
}

/** Leaves a call's admission on the request, for its Express route (see `scopedToken`). */
export function carryGrant(req: IncomingMessage, grant: Grant): void {
  (req as Request).sqlite = grant;
}

/** Every Express route with a scoped token: admits the call, unless the fast path already did. */
export function scopedToken(deps: { grants: TokenGrants }): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.sqlite) return next();
    admitScoped(deps.grants, req, res).then((grant) => {
      req.sqlite = grant;
      next();
    }, next);
  };
}

/**
 * CORS preflight for /api/v1/sqlite/*: a browser sends no credential on a preflight, so the real
 * check happens on the call itself (token and Origin above); the preflight only lets it be sent,
 * and only from the exact origin of a site (its subdomain or a custom domain). Any other Origin
 * gets the 204 without CORS headers, so the browser sends nothing. Whether a host is a site's is
 * answered from memory after the first preflight (SiteHosts): a preflight costs no query.
 */
export function sqlitePreflight(deps: {
  config: Pick<Config, 'baseUrl'>;
  siteHosts: Pick<SiteHosts, 'isSiteHost'>;
}): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'OPTIONS' || !req.path.startsWith('/api/v1/sqlite/')) return next();
    const origin = req.get('origin');
    const host = originHost(deps.config.baseUrl, origin);
    if (origin !== undefined) res.vary('Origin');
    if (host === undefined) return void res.status(204).end();
    deps.siteHosts.isSiteHost(host).then((site) => {
      if (site) {
        res.set('Access-Control-Allow-Origin', origin);
        res.set('Access-Control-Allow-Methods', 'GET, POST, PATCH, DELETE');
        res.set('Access-Control-Allow-Headers', SQLITE_HEADERS.join(', '));
        res.set('Access-Control-Max-Age', '600');
      }
      res.status(204).end();
    }, next);
  };
}

/** The signed-in user of `X-Sqlite-User-Token` (401 when the header is missing or the session bad). */
export async function signedIn(req: Request, users: UserPools): Promise<SignedIn> {
  const token = req.get('x-sqlite-user-token');
  if (token === undefined || token === '') throw new AppError('SQLITE_USER_TOKEN_MISSING');
  return users.authenticate(grantOf(req).database, token);
}

/** An admin of this database (403 'Admin role required' for a user). */
export async function signedInAdmin(req: Request, users: UserPools): Promise<SignedIn> {
  const me = await signedIn(req, users);
  if (me.user.role !== 'admin') throw new AppError('SQLITE_FORBIDDEN', { message: 'Admin role required' });
  return me;
}
