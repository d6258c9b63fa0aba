import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { AppError } from '../errors/index.js';

/**
 * The browser's session cookie. Over HTTPS it is `__Host-hp_session` (Secure, Path=/, no Domain:
 * the browser keeps it to the API's exact host, so a site on a subdomain can neither read nor
 * overwrite it). `__Host-` requires Secure, which a browser refuses to set over plain http: on a
 * laptop's http://localhost the cookie is `hp_session`, without Secure, otherwise the same.
 */
export interface SessionCookie {
  name: string;
  secure: boolean;
  /** The API's origin: the only one a cookie session may be made or used from. */
  origin: string;
}

export function sessionCookieFor(baseUrl: string): SessionCookie {
  const url = new URL(baseUrl);
  const secure = url.protocol === 'https:';
  return { name: secure ? '__Host-hp_session' : 'hp_session', secure, origin: url.origin };
}

/**
 * A session (cookie or bearer) is made only from the API's own origin (or without an Origin
 * header: not a browser's cross-site request), so another site cannot sign a visitor into an
 * account of its choosing (login CSRF) nor end the session the browser held.
 */
export function checkSignInOrigin(req: Request, cookie: SessionCookie): void {
  const origin = req.get('origin');
  if (origin !== undefined && origin !== cookie.origin)
    throw new AppError('CSRF_REJECTED', {
      message: `A browser session cannot be started from ${origin.slice(0, 200)}.`,
    });
}

/** The value of cookie `name` in the request's Cookie header (the first, as browsers send the most specific first). */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.get('cookie');
  if (!header || header.length > 8192) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_-]{1,200}$/.test(value) ? value : undefined;
  }
  return undefined;
}

export function setSessionCookie(res: Response, cookie: SessionCookie, token: string, expiresAt: Date): void {
  res.cookie(cookie.name, token, {
    httpOnly: true,
    secure: cookie.secure,
    sameSite: 'lax',
    path: '/',
    expires: expiresAt,
  });
}

export function clearSessionCookie(res: Response, cookie: SessionCookie): void {
  res.clearCookie(cookie.name, { httpOnly: true, secure: cookie.secure, sameSite: 'lax', path: '/' });
}

/**
 * The CSRF token of a browser session: derived from the session token (sha256 under its own
 * label), so it needs no storage, changes with every session, and cannot be computed without the
 * HttpOnly cookie. The console gets it from the sign-in answer and GET /api/v1/account.
 */
export function csrfTokenOf(sessionToken: string): string {
  return createHash('sha256').update(`hostplane-csrf:${sessionToken}`).digest('base64url');
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every write a cookie authenticates must carry its session's token in `X-CSRF-Token` (a header
 * another site's form or image cannot send, and a cross-origin script cannot without a CORS
 * preflight we never grant); an `Origin` header, when sent, must be the API's own origin.
 */
export function checkCsrf(req: Request, sessionToken: string, apiOrigin: string): void {
  if (SAFE.has(req.method)) return;
  const origin = req.get('origin');
  if (origin !== undefined && origin !== apiOrigin)
    throw new AppError('CSRF_REJECTED', {
      message: `Requests from ${origin.slice(0, 200)} may not use this session.`,
    });
  const presented = Buffer.from(req.get('x-csrf-token') ?? '');
  const expected = Buffer.from(csrfTokenOf(sessionToken));
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected))
    throw new AppError('CSRF_REJECTED', {
      message:
        'Send the X-CSRF-Token header of this session (from the sign-in answer or GET /api/v1/account).',
    });
}
