import { Router, type Request } from 'express';
import { AppError } from '../errors/index.js';
import { jsonBody, requireJsonType, type RouteRegistry } from '../http/index.js';
import type { AccountHooks } from './account-hooks.js';
import { limit, sessionStarter } from './account-auth.js';
import * as s from './account-schemas.js';
import { checkSignInOrigin, type SessionCookie } from './cookies.js';
import { accountSignInsTotal } from './metrics.js';
import type { Platform } from './service.js';
import type { Proof } from './totp.js';

const tags = ['Account'];
const proofOf = (body: { code?: string | undefined; recovery_code?: string | undefined }): Proof => ({
  code: body.code,
  recoveryCode: body.recovery_code,
});

const recoveryExample = {
  success: true,
  recovery_codes: ['k7m2p-x9q4r', 'h3n8t-w2c6v', 'a9d4f-m7s2k', 'p2x8n-r4t6w', 'c6v3h-k9m2q'],
};

/** Counts a second-factor attempt of the account (across replicas) and of the client address. */
export async function limitSecondFactor(
  hooks: AccountHooks,
  req: Request,
  accountId: number,
  addressCounted = false,
): Promise<void> {
  if (!addressCounted) await limit(hooks, req);
  for (const verdict of await Promise.all(
    hooks.limiters.secondFactor.map((l) => l.consume(String(accountId))),
  ))
    if (!verdict.allowed)
      throw new AppError('RATE_LIMITED', {
        message: 'Too many two-factor attempts for this account; try again later.',
        retryAfterSeconds: verdict.retryAfterSeconds,
      });
}

/** Two-factor sign-in: set up, confirm, turn off, new recovery codes, and the sign-in's second step. */
export function totpRoutes(deps: {
  platform: Platform;
  hooks: AccountHooks;
  cookie: SessionCookie;
  registry: RouteRegistry;
}): Router {
  const { platform, hooks, cookie, registry } = deps;
  const totp = platform.totp;
  const router = Router();
  const body = [requireJsonType, jsonBody('16kb')];
  const startSession = sessionStarter(platform.accounts, cookie);

  const limitAccount = (req: Request, accountId: number, addressCounted = false) =>
    limitSecondFactor(hooks, req, accountId, addressCounted);

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/totp',
    summary: 'Whether two-factor sign-in is on, and how many recovery codes are left',
    description: 'TOTP (RFC 6238: 6 digits, 30 seconds), with single-use recovery codes.',
    tags,
    auth: 'session',
    responses: {
      200: {
        description: 'The state',
        schema: s.totpStatusResponse,
        example: { success: true, enabled: true, recovery_codes_left: 9 },
      },
    },
    handler: async ({ req, res }) => {
      const state = await totp.status(req.principal!.accountId);
      res.json({ success: true, enabled: state.enabled, recovery_codes_left: state.recoveryCodesLeft });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/totp/setup',
    summary: 'Start setting up two-factor sign-in: a new secret',
    description:
      'Needs the password again. Answers the secret (base32, for typing in) and its `otpauth://` URI (for a QR code); nothing changes at sign-in until POST /api/v1/account/totp/confirm with a current code. Setting up again before confirming replaces the secret. Stored encrypted with a server secret.',
    tags,
    auth: 'session',
    secret: true,
    middleware: body,
    body: s.passwordCheckBody,
    errors: ['WRONG_PASSWORD', 'TOTP_ALREADY_ENABLED', 'RATE_LIMITED'],
    requestExample: { body: { password: 'correct horse battery staple' } },
    responses: {
      200: {
        description: 'The new secret',
        schema: s.totpSetupResponse,
        example: {
          success: true,
          secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
          otpauth_uri:
            'otpauth://totp/Hostplane:owner%40example.com?issuer=Hostplane&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30',
        },
      },
    },
    handler: async ({ req, res, body }) => {
      const accountId = req.principal!.accountId;
      await limitAccount(req, accountId);
      await platform.accounts.checkOwnPassword(accountId, body.password);
      const profile = await platform.accounts.profile(accountId);
      const { secret, uri } = await totp.setup(accountId, profile?.email ?? '');
      res.json({ success: true, secret, otpauth_uri: uri });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/totp/confirm',
    summary: 'Turn two-factor sign-in on with a current code',
    description:
      'The code proves the authenticator app holds the secret of the setup. Answers 10 recovery codes, shown once (only their hashes are kept): each signs in once in place of a code.',
    tags,
    auth: 'session',
    secret: true,
    middleware: body,
    body: s.totpConfirmBody,
    errors: ['INVALID_TOTP_CODE', 'TOTP_ALREADY_ENABLED', 'TOTP_NOT_ENABLED', 'RATE_LIMITED'],
    requestExample: { body: { code: '123456' } },
    responses: { 200: { description: 'On', schema: s.recoveryCodesResponse, example: recoveryExample } },
    handler: async ({ req, res, body }) => {
      const accountId = req.principal!.accountId;
      await limitAccount(req, accountId);
      const codes = await totp.confirm(accountId, body.code);
      res.json({ success: true, recovery_codes: codes });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/totp/disable',
    summary: 'Turn two-factor sign-in off',
    description:
      'Needs the password and a current code (or a recovery code). The secret and the recovery codes are deleted.',
    tags,
    auth: 'session',
    middleware: body,
    body: s.totpProofBody,
    errors: ['WRONG_PASSWORD', 'INVALID_TOTP_CODE', 'TOTP_NOT_ENABLED', 'RATE_LIMITED'],
    requestExample: { body: { password: 'correct horse battery staple', code: '123456' } },
    responses: { 200: { description: 'Off', schema: s.messageResponse } },
    handler: async ({ req, res, body }) => {
      const accountId = req.principal!.accountId;
      await limitAccount(req, accountId);
      await platform.accounts.checkOwnPassword(accountId, body.password);
      await totp.disable(accountId, proofOf(body));
      res.json({ success: true, message: 'Two-factor sign-in is off.' });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/totp/recovery-codes',
    summary: 'New recovery codes (the earlier ones stop working)',
    description: 'Needs the password and a current code (or a recovery code). Shown once.',
    tags,
    auth: 'session',
    secret: true,
    middleware: body,
    body: s.totpProofBody,
    errors: ['WRONG_PASSWORD', 'INVALID_TOTP_CODE', 'TOTP_NOT_ENABLED', 'RATE_LIMITED'],
    requestExample: { body: { password: 'correct horse battery staple', code: '123456' } },
    responses: {
      200: { description: 'New codes', schema: s.recoveryCodesResponse, example: recoveryExample },
    },
    handler: async ({ req, res, body }) => {
      const accountId = req.principal!.accountId;
      await limitAccount(req, accountId);
      await platform.accounts.checkOwnPassword(accountId, body.password);
      const codes = await totp.regenerate(accountId, proofOf(body));
      res.json({ success: true, recovery_codes: codes });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sign-in/totp',
    summary: 'Finish a sign-in with a code (two-factor sign-in)',
    description:
      'The `challenge` of the first step (POST /api/v1/account/sign-in; valid 5 minutes, once, at most 5 wrong codes) with `code` (the current 6-digit code; a code is never accepted twice) or `recovery_code` (each works once). Starts the session the first step asked for (bearer or cookie), as sign-in does. Rate-limited per account and per client address, across replicas; an `Origin` other than the API’s is refused.',
    tags,
    auth: 'none',
    secret: true,
    middleware: body,
    body: s.totpSignInBody,
    errors: ['INVALID_CHALLENGE', 'INVALID_TOTP_CODE', 'RATE_LIMITED', 'CSRF_REJECTED'],
    requestExample: {
      body: { challenge: 'hp_2fa_8sJx2cQvW4mTzR7bN1yK8pLdF3sG6aE0uVwXoYiZqMc', code: '123456' },
    },
    responses: {
      200: {
        description: 'Signed in',
        schema: s.sessionResponse,
        example: {
          success: true,
          session: 'bearer',
          token: 'hp_sess_2hJx9cQvW4mTzR7bN1yK8pLdF3sG6aE0uVwXoYiZqMc',
          expires_at: '2026-11-24T12:00:00.000Z',
        },
      },
    },
    handler: async ({ req, res, body }) => {
      checkSignInOrigin(req, cookie);
      // The address first: a made-up challenge is an attempt too, and names no account to count.
      await limit(hooks, req);
      const accountId = await totp.challengeAccount(body.challenge);
      await limitAccount(req, accountId, true);
      let done: Awaited<ReturnType<typeof totp.finishChallenge>>;
      try {
        done = await totp.finishChallenge(body.challenge, proofOf(body));
      } catch (err) {
        accountSignInsTotal.inc({ result: 'invalid', session: 'second_factor' });
        throw err;
      }
      await startSession(req, res, done.accountId, done.session);
      accountSignInsTotal.inc({ result: 'ok', session: done.session });
    },
  });
  return router;
}
