import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Platform, Principal } from '../platform/platform.js';
import { unauthorized } from './errors.js';
import type { AuthKind } from './route.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

const sessionHint =
  'This call needs the account owner to be signed in: send their session token as "Authorization: Bearer <token>". ' +
  'An operator can mint one with `hostplane admin session --email <email>`.';

function bearer(req: Request): string | undefined {
  const header = req.get('authorization');
  const match = header?.match(/^Bearer\s+(\S+)$/i);
  return match?.[1];
}

/** Builds the per-route authentication middleware; each sets `req.principal` or answers 401. */
export function authMiddleware(platform: Platform): Record<AuthKind, RequestHandler[]> {
  const wrap =
    (fn: (req: Request) => Promise<void>): RequestHandler =>
    (req: Request, _res: Response, next: NextFunction) => {
      fn(req).then(() => next(), next);
    };

  const byKey = async (req: Request, allowSession: boolean) => {
    const key = req.get('x-api-key');
    if (key) {
      const principal = await platform.authenticateKey(key);
      if (!principal) throw unauthorized('Invalid or expired API key.');
      req.principal = principal;
      return;
    }
    const token = allowSession ? bearer(req) : undefined;
    if (token) {
      const principal = await platform.authenticateSession(token);
      if (!principal) throw unauthorized('Invalid or expired session.', sessionHint);
      req.principal = principal;
      return;
    }
    throw unauthorized('Missing API key: send it in the X-API-Key header.');
  };

  return {
    none: [],
    apiKey: [wrap((req) => byKey(req, false))],
    apiKeyOrSession: [wrap((req) => byKey(req, true))],
    session: [
      wrap(async (req) => {
        const token = bearer(req);
        if (!token) throw unauthorized('Missing session: send "Authorization: Bearer <token>".', sessionHint);
        const principal = await platform.authenticateSession(token);
        if (!principal) throw unauthorized('Invalid or expired session.', sessionHint);
        req.principal = principal;
      }),
    ],
  };
}
