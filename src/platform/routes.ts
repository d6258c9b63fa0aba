import { Router } from 'express';
import { z } from 'zod';
import { jsonBody, type DomainModule, type RouteRegistry } from '../http/index.js';
import { AppError } from '../errors/index.js';
import { TEMP_KEY_DEFAULT_SECONDS, TEMP_KEY_MAX_SECONDS, TEMP_KEY_MIN_SECONDS } from './keys.js';
import type { Logger } from '../observability/index.js';
import type { AccountHooks } from './account-hooks.js';
import { accountInfoRoutes } from './account-info-routes.js';
import { accountAuthRoutes } from './account-routes.js';
import { accountKeyRoutes } from './account-key-routes.js';
import { accountSiteRoutes } from './account-site-routes.js';
import { sessionCookieFor } from './cookies.js';
import type { Platform } from './service.js';
import { sudoRoutes } from './sudo.js';
import { totpRoutes } from './totp-routes.js';

const generateTempBody = z.object({
  storage_folder_id: z
    .number()
    .int()
    .positive()
    .max(2_147_483_647)
    .optional()
    .describe('Site id; the account’s first site when omitted'),
  expires_in: z
    .number()
    .int()
    .min(TEMP_KEY_MIN_SECONDS)
    .max(TEMP_KEY_MAX_SECONDS)
    .default(TEMP_KEY_DEFAULT_SECONDS)
    .describe('Lifetime in seconds (60-86400, default 3600)'),
});

const tempKeyResponse = z.object({
  success: z.boolean(),
  temp_api_key: z.string(),
  expires_in: z.number().int(),
  expires_at: z.iso.datetime(),
  message: z.string(),
});

export function platformRoutes(deps: { platform: Platform; registry: RouteRegistry }): Router {
  const { platform, registry } = deps;
  const router = Router();
  registry.add(router, {
    method: 'post',
    path: '/api/keys/generate-temp',
    summary: 'Mint a temporary API key for one of the signed-in account’s sites',
    description:
      'Creates a new API key scoped to one site of the account whose session is sent as ' +
      '`Authorization: Bearer <token>` (an API key is not accepted here). The key works on every ' +
      '`X-API-Key` endpoint of that site until it expires, then answers 401; it is shown once and ' +
      'only its hash is stored. The key is bound to the session that minted it: it stops working ' +
      'when that session ends (sign-out, ended from the sessions list, a password change elsewhere, ' +
      'a reset, its expiry), and the owner can revoke it under ' +
      '/api/v1/account/sites/{siteId}/temporary-keys.\n\n' +
      '- `storage_folder_id` names the site; without it the account’s first site is used. A site ' +
      'of another account, or none, is a 404.\n' +
      '- `expires_in` is the lifetime in seconds, 60 to 86400 (one day), 3600 by default.\n' +
      '- The body may be left out entirely: the defaults apply.\n' +
      '- A site holds at most 100 live temporary keys: beyond that 403 LIMIT_REACHED.',
    tags: ['Keys'],
    auth: 'session',
    secret: true,
    middleware: [jsonBody('16kb')],
    body: generateTempBody,
    bodyRequired: false,
    errors: ['NOT_FOUND', 'LIMIT_REACHED'],
    requestExample: { body: { storage_folder_id: 1, expires_in: 3600 } },
    responses: {
      200: {
        description: 'The new key (shown once)',
        schema: tempKeyResponse,
        example: {
          success: true,
          temp_api_key: 'hp_temp_2hJx9cQvW4mTzR7bN1yK8pLdF3sG6aE0uVwXoYiZqMc',
          expires_in: 3600,
          expires_at: '2026-11-23T13:00:00.000Z',
          message: 'Temporary API key for site "demo", valid for 3600 seconds. Send it as X-API-Key.',
        },
        links: {
          // The minted key is the credential of the next call (the key generation flow).
          HostingInfoWithTheKey: {
            to: { method: 'get', path: '/api/v1/hosting-info' },
            description: 'The site the key is scoped to, authenticated with the new key',
            parameters: { 'header.X-API-Key': '$response.body#/temp_api_key' },
          },
          ListFilesWithTheKey: {
            to: { method: 'get', path: '/api/v1/files/list' },
            description: 'The files of that site, authenticated with the new key',
            parameters: { 'header.X-API-Key': '$response.body#/temp_api_key' },
          },
        },
      },
    },
    handler: async ({ req, res, body }) => {
      const accountId = req.principal!.accountId;
      const site = await platform.siteOfAccount(accountId, body.storage_folder_id);
      if (!site) {
        throw new AppError('NOT_FOUND', {
          message:
            body.storage_folder_id === undefined
              ? 'This account has no site yet.'
              : `Site ${body.storage_folder_id} not found in this account.`,
        });
      }
      const { key, expiresAt } = await platform.createTempKey(
        site.id,
        body.expires_in,
        req.principal!.sessionId!,
      );
      res.json({
        success: true,
        temp_api_key: key,
        expires_in: body.expires_in,
        expires_at: expiresAt.toISOString(),
        message: `Temporary API key for site "${site.slug}", valid for ${body.expires_in} seconds. Send it as X-API-Key.`,
      });
    },
  });
  return router;
}

const MINUTE = 60_000;

/** The account API's wiring: the other domains' hooks and where things are. */
export interface AccountApi {
  hooks: AccountHooks;
  baseUrl: string;
  siteUrl: (slug: string) => string;
  logger: Logger;
}

/**
 * The platform as a module of the app: the key routes, the account API (when wired) and the
 * expired-credentials sweep.
 */
export function platformModule(platform: Platform, account?: AccountApi): DomainModule {
  return {
    name: 'platform',
    routes: (registry) => {
      const router = platformRoutes({ platform, registry });
      if (account) {
        const cookie = sessionCookieFor(account.baseUrl);
        router.use(
          accountAuthRoutes({ platform, hooks: account.hooks, cookie, registry, logger: account.logger }),
        );
        router.use(totpRoutes({ platform, hooks: account.hooks, cookie, registry }));
        router.use(accountInfoRoutes({ platform, hooks: account.hooks, registry }));
        router.use(sudoRoutes({ platform, hooks: account.hooks, registry }));
        router.use(accountSiteRoutes({ platform, registry, ...account }));
        router.use(accountKeyRoutes({ platform, registry }));
      }
      return router;
    },
    sweeps: [{ name: 'credentials', everyMs: 10 * MINUTE, run: () => platform.sweepExpiredCredentials() }],
  };
}
