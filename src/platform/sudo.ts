import { Router, type Request } from 'express';
import { z } from 'zod';
import { AppError } from '../errors/index.js';
import { jsonBody, requireJsonType, type RouteRegistry } from '../http/index.js';
import type { AccountHooks } from './account-hooks.js';
import { limit } from './account-auth.js';
import { exactlyOneOf, passwordField } from './account-schemas.js';
import { accountSudoTotal } from './metrics.js';
import type { Platform } from './service.js';
import type { Principal } from './types.js';
import { SUDO_SECONDS } from './sessions.js';
import { limitSecondFactor } from './totp-routes.js';

// Sudo mode (GitHub's model): the actions a stolen session must not take on its own — deleting a
// site, creating a permanent key — need the password (or a TOTP code) proven within the last
// SUDO_SECONDS in this session. The time is on the session's row, so every replica honours it.

function checkSudo(principal: Principal | undefined): void {
  const until = principal?.sudoUntil;
  if (until === 'always') return;
  if (until === undefined || until.getTime() <= Date.now()) {
    accountSudoTotal.inc({ result: 'required' });
    throw new AppError('SUDO_REQUIRED');
  }
}

/** Refuses a session whose sudo mode has run out (403 SUDO_REQUIRED); an operator's never has. */
export function requireSudo(req: Request): void {
  checkSudo(req.principal);
}

/**
 * For routes of other domains that mint a credential outliving the caller's key (a SQLite scoped
 * token, an end user with a known password): a temporary key dies with its session, so what it
 * makes must not outlive it unless that session is in sudo mode (403 SUDO_REQUIRED). A permanent
 * key passes (a lasting credential already, whose creation needed sudo mode), and so does an
 * operator session's key.
 */
export function requireSudoForLastingCredential(principal: Principal | undefined): void {
  if (principal?.via === 'permanent_key') return;
  checkSudo(principal);
}

const sudoBody = exactlyOneOf(
  {},
  ['password', passwordField],
  [
    'code',
    z
      .string()
      .min(1)
      .max(12)
      .meta({ pattern: '^[0-9 ]+$' })
      .describe('A current 6-digit code of the authenticator app (two-factor sign-in on)'),
  ],
);

const sudoResponse = z.object({
  success: z.boolean(),
  message: z.string(),
  sudo_until: z.iso.datetime().describe('Until when this session may delete sites and create keys'),
});

export function sudoRoutes(deps: {
  platform: Platform;
  hooks: AccountHooks;
  registry: RouteRegistry;
}): Router {
  const { platform, hooks, registry } = deps;
  const router = Router();
  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sudo',
    summary: 'Confirm the password: sudo mode for the next 15 minutes',
    description:
      `Deleting a site and creating a permanent key need a session that proved the password within the last ${SUDO_SECONDS / 60} minutes (otherwise 403 SUDO_REQUIRED). ` +
      'A sign-in counts as such a proof; this call renews it for the session that makes it (bearer or cookie), on every replica. ' +
      'Send `password`, or `code` (a current code of the authenticator app) when two-factor sign-in is on. ' +
      'Password attempts count against the same per-account limit as a password change, codes against the two-factor limit (429 beyond).',
    tags: ['Account'],
    auth: 'session',
    middleware: [requireJsonType, jsonBody('16kb')],
    body: sudoBody,
    errors: ['WRONG_PASSWORD', 'INVALID_TOTP_CODE', 'TOTP_NOT_ENABLED', 'RATE_LIMITED'],
    requestExample: { body: { password: 'correct horse battery staple' } },
    responses: {
      200: {
        description: 'Confirmed',
        schema: sudoResponse,
        example: {
          success: true,
          message: 'Confirmed: for the next 15 minutes this session can delete sites and create keys.',
          sudo_until: '2026-11-23T12:15:00.000Z',
        },
      },
    },
    handler: async ({ req, res, body }) => {
      const { accountId, sessionId } = req.principal!;
      if (body.code !== undefined) await limitSecondFactor(hooks, req, accountId);
      else await limit(hooks, req, String(accountId));
      try {
        if (body.code !== undefined) await platform.totp.check(accountId, body.code);
        else await platform.accounts.checkOwnPassword(accountId, body.password!);
      } catch (err) {
        accountSudoTotal.inc({ result: 'failed' });
        throw err;
      }
      const until = await platform.accounts.sessions.confirm(sessionId!);
      if (!until)
        throw new AppError('UNAUTHORIZED', { message: 'The session ended.', hint: 'Sign in again.' });
      accountSudoTotal.inc({ result: 'confirmed' });
      res.json({
        success: true,
        message: `Confirmed: for the next ${SUDO_SECONDS / 60} minutes this session can delete sites and create keys.`,
        sudo_until: until.toISOString(),
      });
    },
  });
  return router;
}
