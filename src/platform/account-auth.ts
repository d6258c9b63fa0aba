import { ipKeyGenerator } from 'express-rate-limit';
import type { Request, Response } from 'express';
import { AppError } from '../errors/index.js';
import type { AccountHooks } from './account-hooks.js';
import { csrfTokenOf, readCookie, setSessionCookie, type SessionCookie } from './cookies.js';
import type { Platform } from './service.js';

// What the sign-in routes share: the attempt limits and starting a session (bearer or cookie).

/** Counts one attempt against every limiter of the client's address and of the email it names. */
export async function limit(hooks: AccountHooks, req: Request, email?: string): Promise<void> {
  const address = ipKeyGenerator(req.ip ?? 'unknown', 56);
  const checks = [
    ...hooks.limiters.perAddress.map((l) => l.consume(address)),
    ...(email === undefined
      ? []
      : hooks.limiters.perEmail.map((l) => l.consume(email.trim().toLowerCase().slice(0, 254)))),
  ];
  let wait = 0;
  for (const verdict of await Promise.all(checks))
    if (!verdict.allowed) wait = Math.max(wait, verdict.retryAfterSeconds);
  if (wait > 0)
    throw new AppError('RATE_LIMITED', {
      message: 'Too many attempts for this address or account; try again later.',
      retryAfterSeconds: wait,
    });
}

/**
 * Starts a session after a sign-in, its second step or an accepted invitation (whose handlers
 * checked the origin first, in both modes). A cookie sign-in ends the session the browser still
 * held: a new sign-in always gets a new session id (no session fixation); a bearer one leaves it alone.
 */
export function sessionStarter(accounts: Platform['accounts'], cookie: SessionCookie) {
  return async (req: Request, res: Response, accountId: number, mode: 'bearer' | 'cookie') => {
    const previous = mode === 'cookie' ? readCookie(req, cookie.name) : undefined;
    if (previous) await accounts.sessions.endByToken(previous);
    const kind = mode === 'cookie' ? 'browser' : 'bearer';
    const { token, expiresAt } = await accounts.newSession(accountId, kind, req.get('user-agent'));
    // No-store comes from the routes (RouteDoc.secret): each one that starts a session is flagged.
    if (mode === 'cookie') {
      setSessionCookie(res, cookie, token, expiresAt);
      res.json({
        success: true,
        session: 'cookie',
        csrf_token: csrfTokenOf(token),
        expires_at: expiresAt.toISOString(),
      });
    } else {
      res.json({ success: true, session: 'bearer', token, expires_at: expiresAt.toISOString() });
    }
  };
}
