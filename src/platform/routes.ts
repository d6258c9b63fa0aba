import { Router } from 'express';
import { z } from 'zod';
import { jsonBody, type DomainModule, type RouteRegistry } from '../http/index.js';
import { AppError } from '../errors/index.js';
import { TEMP_KEY_DEFAULT_SECONDS, TEMP_KEY_MAX_SECONDS, TEMP_KEY_MIN_SECONDS } from './keys.js';
import type { Platform } from './service.js';

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
    tags: ['Keys'],
    auth: 'session',
    middleware: [jsonBody('16kb')],
    body: generateTempBody,
    bodyRequired: false,
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'The new key (shown once)', schema: tempKeyResponse } },
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
      const { key, expiresAt } = await platform.createTempKey(site.id, body.expires_in);
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

/** The platform as a module of the app: the key routes and the expired-credentials sweep. */
export function platformModule(platform: Platform): DomainModule {
  return {
    name: 'platform',
    routes: (registry) => platformRoutes({ platform, registry }),
    sweeps: [{ name: 'credentials', everyMs: 10 * MINUTE, run: () => platform.sweepExpiredCredentials() }],
  };
}
