import { Router } from 'express';
import { AppError } from '../errors/index.js';
import { pathId, type RouteRegistry } from '../http/index.js';
import * as s from './account-schemas.js';
import { ownSiteOf, siteParam } from './account-site-routes.js';
import type { TemporaryKeyInfo } from './keys.js';
import type { Platform } from './service.js';
import { requireSudo } from './sudo.js';

const tags = ['Account sites'];
/** Active permanent keys a site may have (the first one comes with the site). */
export const MAX_KEYS_PER_SITE = 20;

/** A site's API keys: permanent ones (list, create, revoke) and the live temporary ones (list, revoke). */
export function accountKeyRoutes(deps: { platform: Platform; registry: RouteRegistry }): Router {
  const { platform, registry } = deps;
  const router = Router();
  const ownSite = ownSiteOf(platform);

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/sites/:siteId/keys',
    params: siteParam,
    summary: 'List the site’s permanent API keys',
    description:
      'Keys that work (not revoked), with when each was last used (recorded at most once a minute). Never the key itself. Temporary keys: GET …/temporary-keys.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'Keys', schema: s.keysResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      const keys = await platform.keys.listPermanent(site.id);
      res.json({ success: true, keys: keys.map(keyJson) });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/account/sites/:siteId/keys',
    params: siteParam,
    summary: 'Create a permanent API key for the site',
    description:
      'The key is in the answer once; only its hash is stored. A site has at most 20 working keys (403 LIMIT_REACHED: revoke one first). ' +
      'Needs sudo mode: a session that signed in or confirmed its password (POST /api/v1/account/sudo) within the last 15 minutes; otherwise 403 SUDO_REQUIRED.',
    tags,
    auth: 'session',
    secret: true,
    errors: ['NOT_FOUND', 'LIMIT_REACHED', 'SUDO_REQUIRED'],
    responses: { 201: { description: 'Created', schema: s.createdKeyResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      requireSudo(req);
      if ((await platform.keys.listPermanent(site.id)).length >= MAX_KEYS_PER_SITE)
        throw new AppError('LIMIT_REACHED', {
          message: `This site has ${MAX_KEYS_PER_SITE} API keys, the most it can have: revoke one first.`,
          limit: MAX_KEYS_PER_SITE,
        });
      const created = await platform.keys.createPermanent(site.id);
      res
        .status(201)
        .json({ success: true, key: keyJson({ ...created, lastUsedAt: null }), api_key: created.key });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/account/sites/:siteId/keys/:keyId',
    params: { ...siteParam, keyId: pathId('The key') },
    summary: 'Revoke a permanent API key',
    description:
      'The key stops working at once on every replica (each reads the key’s row). 404 when the site has no such key.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'Revoked', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      const keyId = s.pathIdOf(req.params, 'keyId');
      if (!(await platform.keys.revoke(site.id, keyId)))
        throw new AppError('NOT_FOUND', {
          message: `Key ${String(req.params.keyId).slice(0, 20)} not found on this site.`,
        });
      res.json({ success: true, message: 'Key revoked.' });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/account/sites/:siteId/temporary-keys',
    params: siteParam,
    summary: 'List the site’s live temporary API keys',
    description:
      'Temporary keys (POST /api/keys/generate-temp) that still work, newest first, each with the session that minted it: `minted_by.kind` is `browser` (a console), `bearer` (a session token) or `operator` (`hostplane admin session`), with its user agent; `current` marks keys minted by the calling session. A key dies with its session; never the key itself.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'Temporary keys', schema: s.temporaryKeysResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      const keys = await platform.keys.listTemporary(site.id);
      const current = req.principal!.sessionId;
      res.json({ success: true, temporary_keys: keys.map((k) => temporaryKeyJson(k, current)) });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/account/sites/:siteId/temporary-keys/:keyId',
    params: { ...siteParam, keyId: pathId('The temporary key') },
    summary: 'Revoke a temporary API key',
    description:
      'The key stops working at once on every replica; the session that minted it goes on. 404 when the site has no such live temporary key.',
    tags,
    auth: 'session',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'Revoked', schema: s.messageResponse } },
    handler: async ({ req, res }) => {
      const site = await ownSite(req);
      const keyId = s.pathIdOf(req.params, 'keyId');
      if (!(await platform.keys.revoke(site.id, keyId, 'temporary')))
        throw new AppError('NOT_FOUND', {
          message: `Temporary key ${String(req.params.keyId).slice(0, 20)} not found on this site.`,
        });
      res.json({ success: true, message: 'Temporary key revoked.' });
    },
  });
  return router;
}

const keyJson = (k: { id: number; prefix: string; createdAt: Date; lastUsedAt: Date | null }) => ({
  id: k.id,
  prefix: k.prefix,
  created_at: k.createdAt.toISOString(),
  last_used_at: k.lastUsedAt?.toISOString() ?? null,
});

const temporaryKeyJson = (k: TemporaryKeyInfo, currentSessionId: number | undefined) => ({
  ...keyJson(k),
  expires_at: k.expiresAt.toISOString(),
  minted_by: {
    session_id: k.session.id,
    kind: k.session.operator ? ('operator' as const) : k.session.kind,
    user_agent: k.session.userAgent,
    current: k.session.id === currentSessionId,
  },
});
