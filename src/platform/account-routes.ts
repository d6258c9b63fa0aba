import { Router } from 'express';
import { AppError } from '../errors/index.js';
import { jsonBody, pathId, requireJsonType, type RouteRegistry } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import type { AccountHooks } from './account-hooks.js';
import * as s from './account-schemas.js';
import {
  checkSignInOrigin,
  clearSessionCookie,
  csrfTokenOf,
  readCookie,
  type SessionCookie,
} from './cookies.js';
import { limit, sessionStarter } from './account-auth.js';
import { signInAttempts } from './sign-in-attempts.js';
import { accountSignInsTotal } from './metrics.js';
import { planFor } from './plans.js';
import type { Platform } from './service.js';

const tags = ['Account'];

/** Sign-up, sign-in and out, invitations, verification, passwords and sessions. */
export function accountAuthRoutes(deps: {
  platform: Platform;
  hooks: AccountHooks;
  cookie: SessionCookie;
  registry: RouteRegistry;
  logger: Logger;
}): Router {
  const { platform, hooks, cookie, registry, logger } = deps;
  const accounts = platform.accounts;
  const router = Router();
  // JSON only: a cross-site page cannot send it without a preflight (docs/developers/account-api.md).
  const body = [requireJsonType, jsonBody('16kb')];

  const startSession = sessionStarter(accounts, cookie);
  const attempts = signInAttempts({ platform, hooks, cookie });
  const sessionAnswer = { description: 'Signed in', schema: s.sessionResponse };
  const message = (text: string) => ({ success: true, message: text });
  // Without SMTP nothing is mailed: the answer says so (the same for every address, so it still
  // reveals nothing about accounts).
  const accepted = hooks.mail
    ? 'If the address can receive it, a mail with a link is on its way.'
    : 'This server sends no mail (its operator has not set up SMTP), so no link was mailed. Ask the operator of this server for help.';

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sign-up',
    summary: 'Open sign-up: create an account and mail a verification link',
    description:
      'Only when the server runs with `HOSTPLANE_SIGNUP=open` (otherwise 403 SIGNUP_CLOSED: accounts come by invitation). ' +
      'Answers 202 whether or not the address already has an account (nothing is revealed: the owner of a taken address gets a mail saying someone tried, with a link to reset the password); a new account can sign in at once but creates a site only after following the mailed link (24 h). ' +
      'Rate-limited per client address and per email.',
    tags,
    auth: 'none',
    middleware: body,
    body: s.signUpBody,
    errors: ['SIGNUP_CLOSED', 'INVALID_EMAIL', 'PASSWORD_TOO_SHORT', 'PASSWORD_TOO_COMMON', 'RATE_LIMITED'],
    responses: { 202: { description: 'Check your mail', schema: s.messageResponse } },
    handler: async ({ req, res, body }) => {
      if (hooks.signup !== 'open') throw new AppError('SIGNUP_CLOSED');
      await limit(hooks, req, body.email);
      await accounts.signUp(body.email, body.password);
      res.status(202).json(message(accepted));
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sign-in',
    summary: 'Sign in with email and password',
    description:
      'Starts a new session: `"session": "bearer"` (default) answers a token for `Authorization: Bearer`; `"session": "cookie"` sets the browser cookie (HttpOnly, SameSite=Lax; `__Host-hp_session` over HTTPS) and answers the `csrf_token` every cookie-authenticated write must send as `X-CSRF-Token`. ' +
      'A cookie sign-in ends the session cookie the browser still held (a new session id at every sign-in). An `Origin` other than the API’s is refused (403 CSRF_REJECTED) in both modes; the body must be `application/json` (415 otherwise). ' +
      'A wrong password, an unknown email and an account without a password all answer the same 401, in the same time. Rate-limited per client address (every attempt) and per email (failures only), across replicas. ' +
      'A successful sign-in also sets a device cookie (`hp_device`, `__Host-hp_device` over HTTPS; HttpOnly, SameSite=Strict, one year): a later attempt that presents it counts against that browser’s own failure budget instead of the email’s, so a guesser who spends the email’s budget does not lock the owner’s known browsers out. ' +
      'An account with two-factor sign-in answers `second_factor: "totp"` and a `challenge` instead of a session: POST /api/v1/account/sign-in/totp finishes it (in the mode asked here).',
    tags,
    auth: 'none',
    secret: true,
    middleware: body,
    body: s.signInBody,
    errors: ['INVALID_CREDENTIALS', 'RATE_LIMITED', 'CSRF_REJECTED'],
    requestExample: {
      body: { email: 'owner@example.com', password: 'correct horse battery staple', session: 'bearer' },
    },
    responses: {
      200: {
        description:
          'Signed in, or (the account has two-factor sign-in on) a challenge for POST /api/v1/account/sign-in/totp',
        schema: s.signInResponse,
        example: {
          success: true,
          second_factor: 'totp',
          challenge: 'hp_2fa_8sJx2cQvW4mTzR7bN1yK8pLdF3sG6aE0uVwXoYiZqMc',
          expires_at: '2026-11-23T12:05:00.000Z',
        },
      },
    },
    handler: async ({ req, res, body }) => {
      checkSignInOrigin(req, cookie);
      const session = body.session;
      let attempt;
      try {
        attempt = await attempts.begin(req, body.email);
      } catch (err) {
        accountSignInsTotal.inc({ result: 'limited', session });
        throw err;
      }
      let accountId: number;
      try {
        accountId = await accounts.signIn(body.email, body.password);
      } catch (err) {
        accountSignInsTotal.inc({ result: 'invalid', session });
        throw err;
      }
      await attempt.succeeded(res, accountId);
      if (await platform.totp.isEnabled(accountId)) {
        const { challenge, expiresAt } = await platform.totp.startChallenge(accountId, session);
        res.json({
          success: true,
          second_factor: 'totp',
          challenge,
          expires_at: expiresAt.toISOString(),
        });
        accountSignInsTotal.inc({ result: 'second_factor', session });
        return;
      }
      await startSession(req, res, accountId, session);
      accountSignInsTotal.inc({ result: 'ok', session });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sign-out',
    summary: 'End the current session',
    description: 'Ends the session that made the call (bearer or cookie) and clears the cookie.',
    tags,
    auth: 'session',
    responses: { 200: { description: 'Signed out', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const { accountId, sessionId } = req.principal!;
      if (sessionId !== undefined) await accounts.sessions.end(accountId, sessionId);
      clearSessionCookie(res, cookie);
      res.json(message('Signed out.'));
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/invitations/accept',
    summary: 'Accept an invitation: set the password and sign in',
    description:
      'The token comes from the link `hostplane admin invite` printed or mailed (valid 7 days, once). Sets the password, marks the address verified and starts a session as sign-in does.',
    tags,
    auth: 'none',
    secret: true,
    middleware: body,
    body: s.acceptInviteBody,
    errors: ['INVALID_TOKEN', 'PASSWORD_TOO_SHORT', 'PASSWORD_TOO_COMMON', 'RATE_LIMITED', 'CSRF_REJECTED'],
    responses: { 200: sessionAnswer },
    handler: async ({ req, res, body }) => {
      checkSignInOrigin(req, cookie);
      await limit(hooks, req);
      const accountId = await accounts.acceptInvite(body.token, body.password);
      await attempts.issueDevice(res, accountId);
      await startSession(req, res, accountId, body.session);
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/verify',
    summary: 'Verify the email address with the mailed token',
    description:
      'Open sign-up: the link of the verification mail (valid 24 h, once). Then the account can create sites.',
    tags,
    auth: 'none',
    middleware: body,
    body: s.verifyBody,
    errors: ['INVALID_TOKEN', 'RATE_LIMITED'],
    responses: { 200: { description: 'Verified', schema: s.messageResponse } },
    handler: async ({ req, res, body }) => {
      await limit(hooks, req);
      await accounts.verifyEmail(body.token);
      res.json(message('Your email address is verified.'));
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/verify/resend',
    summary: 'Mail a new verification link',
    description: 'Earlier links stop working. Nothing is sent when the address is already verified.',
    tags,
    auth: 'session',
    errors: ['RATE_LIMITED'],
    responses: { 202: { description: 'Sent', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const profile = await accounts.profile(req.principal!.accountId);
      await limit(hooks, req, profile?.email);
      await accounts.resendVerification(req.principal!.accountId);
      res.status(202).json(message(accepted));
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/password-reset',
    summary: 'Mail a password reset link',
    description:
      'Answers 202 whether or not the address has an account, before the address is even looked up (the same answer in the same time). The link works once, for one hour; asking again makes earlier links stop working. Rate-limited per client address and per email.',
    tags,
    auth: 'none',
    middleware: body,
    body: s.resetRequestBody,
    errors: ['RATE_LIMITED'],
    responses: { 202: { description: 'Check your mail', schema: s.messageResponse } },
    handler: async ({ req, res, body }) => {
      await limit(hooks, req, body.email);
      // Answered before the address is looked up: a known one (a token and a mail written) and an
      // unknown one (nothing) cannot be told apart by the time the answer takes.
      res.status(202).json(message(accepted));
      try {
        await accounts.requestReset(body.email);
      } catch (err) {
        logger.warn({ err }, 'a password reset request failed after its answer');
      }
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/password-reset/confirm',
    summary: 'Set a new password with the mailed reset token',
    description: 'Every session of the account ends; sign in again with the new password.',
    tags,
    auth: 'none',
    middleware: body,
    body: s.resetConfirmBody,
    errors: ['INVALID_TOKEN', 'PASSWORD_TOO_SHORT', 'PASSWORD_TOO_COMMON', 'RATE_LIMITED'],
    responses: { 200: { description: 'Password set', schema: s.messageResponse } },
    handler: async ({ req, res, body }) => {
      await limit(hooks, req);
      await accounts.resetPassword(body.token, body.password);
      res.json(message('Your password is set: sign in with it.'));
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/password',
    summary: 'Change the password',
    description: 'Needs the current password. Every other session of the account ends; this one stays.',
    tags,
    auth: 'session',
    middleware: body,
    body: s.changePasswordBody,
    errors: ['WRONG_PASSWORD', 'PASSWORD_TOO_SHORT', 'PASSWORD_TOO_COMMON', 'RATE_LIMITED'],
    responses: { 200: { description: 'Changed', schema: s.messageResponse } },
    handler: async ({ req, res, body }) => {
      const { accountId, sessionId } = req.principal!;
      await limit(hooks, req, String(accountId));
      await accounts.changePassword(accountId, sessionId, body.current_password, body.new_password);
      res.json(message('Password changed; your other sessions have ended.'));
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/sessions',
    summary: 'List the account’s sessions',
    description:
      'Bearer and browser sessions that have not expired, newest first; `current` marks the caller’s.',
    tags,
    auth: 'session',
    responses: { 200: { description: 'Sessions', schema: s.sessionsResponse } },
    handler: async ({ req, res }) => {
      const { accountId, sessionId } = req.principal!;
      const sessions = await accounts.sessions.list(accountId);
      res.json({
        success: true,
        sessions: sessions.map((x) => ({
          id: x.id,
          kind: x.kind,
          user_agent: x.userAgent,
          created_at: x.createdAt.toISOString(),
          last_used_at: x.lastUsedAt?.toISOString() ?? null,
          expires_at: x.expiresAt.toISOString(),
          current: x.id === sessionId,
        })),
      });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/account/sessions/:id',
    params: { id: pathId('The session') },
    summary: 'End one of the account’s sessions',
    description:
      'The session stops working at once, on every replica. 404 when the account has no such session.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'Ended', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const id = s.pathIdOf(req.params, 'id');
      const ended = await accounts.sessions.end(req.principal!.accountId, id);
      if (!ended)
        throw new AppError('NOT_FOUND', {
          message: `Session ${String(req.params.id).slice(0, 20)} not found.`,
        });
      if (id === req.principal!.sessionId) clearSessionCookie(res, cookie);
      res.json(message('Session ended.'));
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account',
    summary: 'The signed-in account: email, plan and usage against every plan limit',
    description:
      'Files and storage per site, forms, this month’s submissions, SQLite databases and the largest database’s size and user pool, each against the plan’s limit (null: unlimited). `upgrade_url` is the console page that shows the plans; changing a plan is the operator’s business. A cookie session also gets its `csrf_token` here.',
    tags,
    auth: 'session',
    secret: true,
    responses: { 200: { description: 'The account', schema: s.meResponse } },
    handler: async ({ req, res }) => {
      const accountId = req.principal!.accountId;
      const [profile, sites, extra] = await Promise.all([
        accounts.profile(accountId),
        platform.sites.listOfAccount(accountId),
        hooks.usage(accountId),
      ]);
      if (!profile)
        throw new AppError('UNAUTHORIZED', { message: 'The account is gone.', hint: 'Sign in again.' });
      const plan = planFor(profile.plan);
      const rollback = await hooks.rollback.bytes(sites.map((site) => site.id));
      const token = req.principal!.sessionKind === 'browser' ? readCookie(req, cookie.name) : undefined;
      res.json({
        success: true,
        email: profile.email,
        email_verified: profile.emailVerified,
        created_at: profile.createdAt.toISOString(),
        plan: { type: plan.type, name: plan.name },
        usage: {
          sites: sites.map((site) => ({
            id: site.id,
            slug: site.slug,
            files: { used: site.fileCount, limit: plan.maxFiles },
            storage_bytes: { used: site.storageBytes, limit: plan.maxStorageBytes },
            rollback_bytes: { used: rollback.get(site.id) ?? 0, limit: hooks.rollback.limit(plan) },
          })),
          forms: { used: extra.forms, limit: plan.maxForms },
          submissions_this_month: {
            used: extra.submissionsThisMonth,
            limit: plan.maxSubmissionsPerMonth,
            resets_at: extra.submissionsResetAt.toISOString(),
          },
          sqlite_databases: { used: extra.sqliteDatabases, limit: plan.maxSqliteDatabases },
          sqlite_database_bytes: { largest: extra.largestSqliteBytes, limit: plan.maxSqliteBytes },
          sqlite_users_per_database: { largest: extra.largestSqliteUsers, limit: plan.maxSqliteUsers },
        },
        upgrade_url: hooks.upgradeUrl,
        signup: hooks.signup,
        mail: hooks.mail,
        ...(token ? { csrf_token: csrfTokenOf(token) } : {}),
      });
    },
  });
  return router;
}
