import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError } from '../errors/index.js';
import type { Authenticators } from '../http/index.js';
import { checkCsrf, readCookie, sessionCookieFor } from './cookies.js';
import type { Platform } from './service.js';
import type { Principal } from './types.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

const keyHint =
  'Ask the user for a valid Hostplane API key (sent as the X-API-Key header). ' +
  'Permanent keys are created per site by the account owner; temporary keys come from POST /api/keys/generate-temp.';
const sessionHint =
  'This call needs the account owner to be signed in: send their session token as "Authorization: Bearer <token>" ' +
  '(POST /api/v1/account/sign-in makes one), or the browser session cookie with X-CSRF-Token on writes. ' +
  'An operator can mint one with `hostplane admin session --email <email>`.';

export const unauthorized = (message: string, hint = keyHint): AppError =>
  new AppError('UNAUTHORIZED', { message, hint });

/**
 * The bearer token of the Authorization header: undefined without a Bearer header (another
 * scheme is not a Hostplane credential), '' for a Bearer header without a token (refused like a
 * wrong one, never ignored).
 */
function bearer(req: Request): string | undefined {
  const header = req.get('authorization');
  if (header === undefined || !/^Bearer\b/i.test(header)) return undefined;
  return header.match(/^Bearer\s+(\S+)\s*$/i)?.[1] ?? '';
}

/** The per-route credential checks; each sets `req.principal` or answers 401. */
export function authenticators(platform: Platform, baseUrl = 'http://localhost:8080'): Authenticators {
  const cookie = sessionCookieFor(baseUrl);
  const wrap =
    (fn: (req: Request) => Promise<void>): RequestHandler =>
    (req: Request, _res: Response, next: NextFunction) => {
      fn(req).then(() => next(), next);
    };

  const bySession = async (req: Request, token: string) => {
    const principal = token ? await platform.authenticateSession(token) : undefined;
    if (!principal) throw unauthorized('Invalid or expired session.', sessionHint);
    req.principal = principal;
  };

  /** The browser's session cookie: its writes also need the session's CSRF token. */
  const byCookie = async (req: Request): Promise<boolean> => {
    const token = readCookie(req, cookie.name);
    if (token === undefined) return false;
    const principal = await platform.authenticateSession(token, 'browser');
    if (!principal) throw unauthorized('Invalid or expired session: sign in again.', sessionHint);
    checkCsrf(req, token, cookie.origin);
    req.principal = principal;
    return true;
  };

  // A credential that is present is always checked, even when empty: an empty X-API-Key beside a
  // valid session is refused rather than silently ignored.
  const byKey = async (req: Request, allowSession: boolean) => {
    const key = req.get('x-api-key');
    if (key !== undefined) {
      const principal = key ? await platform.authenticateKey(key.trim()) : undefined;
      if (!principal) throw unauthorized('Invalid or expired API key.');
      req.principal = principal;
      return;
    }
    const token = allowSession ? bearer(req) : undefined;
    if (token !== undefined) return bySession(req, token);
    if (allowSession && (await byCookie(req))) return;
    throw unauthorized('Missing API key: send it in the X-API-Key header.');
  };

  return {
    none: [],
    apiKey: [wrap((req) => byKey(req, false))],
    apiKeyOrSession: [wrap((req) => byKey(req, true))],
    session: [
      wrap(async (req) => {
        const token = bearer(req);
        if (token === undefined && (await byCookie(req))) return;
        if (token === undefined)
          throw unauthorized('Missing session: send "Authorization: Bearer <token>".', sessionHint);
        await bySession(req, token);
      }),
    ],
  };
}
