import { Router, type Request, type RequestHandler } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { jsonBody, parseOrThrow, pathId, type RouteRegistry } from '../http/index.js';
import { requireSudoForLastingCredential, unauthorized, type Platform } from '../platform/index.js';
import type { RateLimiter } from '../ratelimit/index.js';
import { grantOf, scopedToken, signedIn, signedInAdmin } from './access.js';
import * as s from './schemas.js';
import type { TokenGrants } from './grants.js';
import { userJson, type PoolActor, type UserPools } from './users.js';

/** Register and login share one bucket per client address (spec 8): 5 a minute and 20 an hour. */
export const AUTH_RATE_LIMITS = [
  { name: 'sqlite_auth_minute', points: 5, durationSeconds: 60 },
  { name: 'sqlite_auth_hour', points: 20, durationSeconds: 3600 },
] as const;

const adminHint =
  'Managing end users needs, beside the scoped token, the X-Sqlite-User-Token of an admin of this database or the site’s master key (X-API-Key).';
const sudoNote =
  'With a temporary key as the master key, the session that minted it must be in sudo mode (password confirmed within the last 15 minutes, POST /api/v1/account/sudo), since the password set here outlives the key; otherwise 403 SUDO_REQUIRED. Permanent keys need no such confirmation.';
const registerHint =
  'Registering an end user needs the site’s master key (X-API-Key) — which bootstraps the first user as admin — or the X-Sqlite-User-Token of an admin of this database.';

/** End-user endpoints (spec 4.10): all need the scoped token and an allowed Origin. */
export function userRoutes(deps: {
  config: Config;
  platform: Platform;
  grants: TokenGrants;
  users: UserPools;
  limiters: RateLimiter[];
  registry: RouteRegistry;
}): Router {
  const { platform, users, registry } = deps;
  const router = Router();
  const tags = ['SQLite users'];
  const body = jsonBody('16kb');
  const scoped = scopedToken(deps);
  /** The site's host names (its slug's and its custom domains'): no password may be built on them. */
  const siteHosts = (req: Request) => grantOf(req).origins.map((origin) => new URL(origin).hostname);

  const authLimit: RequestHandler = (req, _res, next) => {
    const key = ipKeyGenerator(req.ip ?? 'unknown', 56);
    (async () => {
      let wait = 0;
      for (const limiter of deps.limiters) {
        const verdict = await limiter.consume(key);
        if (!verdict.allowed) wait = Math.max(wait, verdict.retryAfterSeconds);
      }
      if (wait > 0)
        throw new AppError('RATE_LIMITED', {
          message: 'Too many sign-in or registration attempts from this address; try again later.',
          retryAfterSeconds: wait,
        });
    })().then(() => next(), next);
  };

  /**
   * The master key in `X-API-Key`, which must own the scoped token's database (spec 5.5). `lasting`:
   * the call makes a credential that outlives a temporary key (an end user whose password the
   * caller knows), so such a key's session must be in sudo mode (403 SUDO_REQUIRED).
   */
  const checkOwnerKey = async (req: Request, key: string, hint: string, lasting = false) => {
    const principal = key ? await platform.authenticateKey(key.trim()) : undefined;
    if (!principal) throw unauthorized('Invalid or expired API key.', hint);
    if (principal.siteId !== grantOf(req).database.siteId)
      throw new AppError('SQLITE_FORBIDDEN', { message: 'This master key does not own the database.' });
    if (lasting) requireSudoForLastingCredential(principal);
  };

  /** Who may register (spec 5.7): the master key owning the database, or an admin session. */
  const mayRegister = async (req: Request) => {
    const key = req.get('x-api-key');
    if (key !== undefined) return checkOwnerKey(req, key, registerHint, true);
    if (req.get('x-sqlite-user-token') === undefined)
      throw unauthorized('Registration is not public.', registerHint);
    await signedInAdmin(req, users);
  };

  /**
   * Who administers the pool (list, change, reset, delete): an admin session, as the spec says,
   * or — as register already allows — the site's master key owning the database (extension: the
   * owner manages end users from the console without being one of them). The key wins when both
   * are sent, as on register.
   */
  const poolAdmin = async (req: Request, lasting = false): Promise<PoolActor> => {
    const databaseId = grantOf(req).database.id;
    const key = req.get('x-api-key');
    if (key !== undefined) {
      await checkOwnerKey(req, key, adminHint, lasting);
      return { databaseId, userId: null };
    }
    const me = await signedInAdmin(req, users);
    return { databaseId, userId: me.user.id };
  };

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/auth/register',
    summary: 'Register an end user of the database (master key or admin session)',
    description:
      'Never public. With the site’s master key (`X-API-Key`) or an admin’s `X-Sqlite-User-Token`, beside the scoped token. The first user of the pool becomes its admin; later ones are users. ' +
      'Emails are trimmed and lower-cased (≤ 254); passwords need 8 characters and must not be common, repetitive, sequential, nor built on the email, the site’s host names or the service’s name (400 `PASSWORD_TOO_COMMON`, the message says which); display names ≤ 120. Users per database are capped by the plan (402). ' +
      'Register and login share a limit of 5 a minute and 20 an hour per client address. ' +
      sudoNote,
    tags,
    auth: 'sqliteUserOrApiKey',
    errors: [
      'SQLITE_TOKEN_INVALID',
      'SQLITE_FORBIDDEN',
      'UNAUTHORIZED',
      'SUDO_REQUIRED',
      'SQLITE_SESSION_INVALID',
      'INVALID_EMAIL',
      'PASSWORD_TOO_SHORT',
      'PASSWORD_TOO_COMMON',
      'EMAIL_ALREADY_REGISTERED',
      'USER_POOL_LIMIT_REACHED',
      'RATE_LIMITED',
    ],
    middleware: [scoped, authLimit, body],
    body: s.registerBody,
    responses: {
      201: {
        description: 'The new user',
        schema: s.registerResponse,
        links: {
          LoginAsTheUser: {
            to: { method: 'post', path: '/api/v1/sqlite/auth/login' },
            parameters: { 'header.X-Sqlite-Token': '$request.header.X-Sqlite-Token' },
            body: { email: '$request.body#/email', password: '$request.body#/password' },
          },
          UpdateTheUser: {
            to: { method: 'patch', path: '/api/v1/sqlite/auth/users/:id' },
            parameters: { id: '$response.body#/user/id' },
          },
          ResetTheUsersPassword: {
            to: { method: 'post', path: '/api/v1/sqlite/auth/users/:id/reset-password' },
            parameters: { id: '$response.body#/user/id' },
          },
          DeleteTheUser: {
            to: { method: 'delete', path: '/api/v1/sqlite/auth/users/:id' },
            parameters: { id: '$response.body#/user/id' },
          },
        },
      },
    },
    handler: async ({ req, res, body }) => {
      await mayRegister(req);
      const { database, plan } = grantOf(req);
      const user = await users.register(database, plan.maxSqliteUsers, plan.type, body, siteHosts(req));
      res.status(201).json({ success: true, user: userJson(user, false) });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/auth/login',
    summary: 'Sign an end user in: a session token for X-Sqlite-User-Token',
    description:
      'A wrong email and a wrong password get the same 401 `INVALID_CREDENTIALS`, after the same work. A disabled user gets 403 `ACCOUNT_DISABLED`. ' +
      'Sessions last 30 days and are extended to 30 days when used with less than 7 left. Answered with `Cache-Control: no-store`.',
    tags,
    auth: 'sqliteToken',
    secret: true,
    errors: [
      'SQLITE_TOKEN_INVALID',
      'SQLITE_FORBIDDEN',
      'INVALID_CREDENTIALS',
      'ACCOUNT_DISABLED',
      'RATE_LIMITED',
    ],
    middleware: [scoped, authLimit, body],
    body: s.loginBody,
    responses: {
      200: {
        description: 'Signed in',
        schema: s.loginResponse,
        // The session is the X-Sqlite-User-Token of the next calls, beside the same scoped token.
        links: {
          MeWithTheSession: {
            to: { method: 'get', path: '/api/v1/sqlite/auth/me' },
            parameters: {
              'header.X-Sqlite-Token': '$request.header.X-Sqlite-Token',
              'header.X-Sqlite-User-Token': '$response.body#/userToken',
            },
          },
          ChangePasswordWithTheSession: {
            to: { method: 'post', path: '/api/v1/sqlite/auth/change-password' },
            parameters: {
              'header.X-Sqlite-Token': '$request.header.X-Sqlite-Token',
              'header.X-Sqlite-User-Token': '$response.body#/userToken',
            },
            body: { currentPassword: '$request.body#/password' },
          },
          LogoutTheSession: {
            to: { method: 'post', path: '/api/v1/sqlite/auth/logout' },
            parameters: {
              'header.X-Sqlite-Token': '$request.header.X-Sqlite-Token',
              'header.X-Sqlite-User-Token': '$response.body#/userToken',
            },
          },
        },
      },
    },
    handler: async ({ req, res, body }) => {
      const session = await users.login(grantOf(req).database, body.email, body.password);
      res.json({
        success: true,
        userToken: session.token,
        expiresAt: session.expiresAt.toISOString(),
        user: userJson(session.user),
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/auth/logout',
    summary: 'End the session of X-Sqlite-User-Token (idempotent)',
    description: '204 also when the session does not exist or already ended.',
    tags,
    auth: 'sqliteTokenMaybeUser',
    errors: ['SQLITE_TOKEN_INVALID', 'SQLITE_FORBIDDEN'],
    middleware: [scoped],
    responses: { 204: { description: 'Signed out' } },
    handler: async ({ req, res }) => {
      await users.logout(grantOf(req).database, req.get('x-sqlite-user-token'));
      res.status(204).end();
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/auth/me',
    summary: 'The signed-in end user',
    description: 'The user of `X-Sqlite-User-Token`, with `createdAt` and `lastLoginAt`.',
    tags,
    auth: 'sqliteUser',
    errors: [
      'SQLITE_TOKEN_INVALID',
      'SQLITE_FORBIDDEN',
      'SQLITE_USER_TOKEN_MISSING',
      'SQLITE_SESSION_INVALID',
    ],
    middleware: [scoped],
    responses: { 200: { description: 'The user', schema: s.userResponse } },
    handler: async ({ req, res }) => {
      const me = await signedIn(req, users);
      res.json({ success: true, user: userJson(me.user) });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/auth/change-password',
    summary: 'Change the signed-in user’s password (other sessions end)',
    description:
      'Needs the current password (401 `INVALID_CREDENTIALS` when wrong). This session stays; every other session of the user ends.',
    tags,
    auth: 'sqliteUser',
    errors: [
      'SQLITE_TOKEN_INVALID',
      'SQLITE_FORBIDDEN',
      'SQLITE_USER_TOKEN_MISSING',
      'SQLITE_SESSION_INVALID',
      'INVALID_CREDENTIALS',
      'PASSWORD_TOO_SHORT',
      'PASSWORD_TOO_COMMON',
    ],
    middleware: [scoped, body],
    body: s.changePasswordBody,
    responses: { 204: { description: 'Changed' } },
    handler: async ({ req, res, body }) => {
      const me = await signedIn(req, users);
      await users.changePassword(me, body.currentPassword, body.newPassword, siteHosts(req));
      res.status(204).end();
    },
  });

  const adminErrors = [
    'SQLITE_TOKEN_INVALID',
    'SQLITE_FORBIDDEN',
    'SQLITE_USER_TOKEN_MISSING',
    'SQLITE_SESSION_INVALID',
    'UNAUTHORIZED',
  ] as const;
  const byOwnerToo =
    ' Also answered for the site’s master key (`X-API-Key`, owning the database) instead of a session (extension): the owner is no user of the pool, so the rules about oneself do not apply; the last active admin stays.';

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/auth/users',
    summary: 'List the database’s end users (admin)',
    description: 'Every user of the pool, oldest first. Needs an admin session.' + byOwnerToo,
    tags,
    auth: 'sqliteUserOrApiKey',
    errors: [...adminErrors],
    middleware: [scoped],
    responses: { 200: { description: 'The users', schema: s.usersResponse } },
    handler: async ({ req, res }) => {
      const actor = await poolAdmin(req);
      res.json({ success: true, users: (await users.list(actor.databaseId)).map((u) => userJson(u)) });
    },
  });

  registry.add(router, {
    method: 'patch',
    path: '/api/v1/sqlite/auth/users/:id',
    params: { id: pathId('The user') },
    summary: 'Change a user’s role, disabled flag or display name (admin)',
    description:
      'Guard rails (403 with `code`): an admin cannot change their own role (`CANNOT_CHANGE_OWN_ROLE`) or disable themselves (`CANNOT_DISABLE_SELF`); the last active admin cannot be demoted or disabled (`LAST_ADMIN`). ' +
      'Disabling a user ends all their sessions at once. Answers `{success, user}`.' +
      byOwnerToo,
    tags,
    auth: 'sqliteUserOrApiKey',
    errors: [...adminErrors, 'NOT_FOUND'],
    middleware: [scoped, body],
    body: s.updateUserBody,
    responses: { 200: { description: 'The user as changed', schema: s.userResponse } },
    handler: async ({ req, res, body }) => {
      const { id } = parseOrThrow(s.userIdParam, req.params, 'path');
      const user = await users.update(await poolAdmin(req), id, body);
      res.json({ success: true, user: userJson(user) });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/auth/users/:id/reset-password',
    params: { id: pathId('The user') },
    summary: 'Set a user’s password (admin; all their sessions end)',
    description: 'No old password is needed and no email is sent.' + byOwnerToo + ' ' + sudoNote,
    tags,
    auth: 'sqliteUserOrApiKey',
    errors: [...adminErrors, 'NOT_FOUND', 'PASSWORD_TOO_SHORT', 'PASSWORD_TOO_COMMON', 'SUDO_REQUIRED'],
    middleware: [scoped, body],
    body: s.resetPasswordBody,
    responses: { 204: { description: 'Reset' } },
    handler: async ({ req, res, body }) => {
      const { id } = parseOrThrow(s.userIdParam, req.params, 'path');
      await users.resetPassword(await poolAdmin(req, true), id, body.newPassword, siteHosts(req));
      res.status(204).end();
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/sqlite/auth/users/:id',
    params: { id: pathId('The user') },
    summary: 'Delete a user (admin; not yourself, not the last active admin)',
    description: 'The user’s sessions go with it.' + byOwnerToo,
    tags,
    auth: 'sqliteUserOrApiKey',
    errors: [...adminErrors, 'NOT_FOUND'],
    middleware: [scoped],
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ req, res }) => {
      const { id } = parseOrThrow(s.userIdParam, req.params, 'path');
      await users.delete(await poolAdmin(req), id);
      res.status(204).end();
    },
  });
  return router;
}
