import { Router } from 'express';
import type { Config } from '../config/index.js';
import { jsonBody, parseOrThrow, pathId, type RouteRegistry } from '../http/index.js';
import { requireSudoForLastingCredential, siteForRequest, type Platform } from '../platform/index.js';
import { normalizeDatabasePath } from './db-path.js';
import { siteOrigins } from './origins.js';
import * as s from './schemas.js';
import type { SqliteTokenRow } from './tables.js';
import type { TokenGrants } from './grants.js';
import type { SqliteTokens } from './tokens.js';

const iso = (d: Date | null) => d?.toISOString() ?? null;

/** What the SQLite domain needs of the files domain. */
export interface DatabaseFileIndex {
  registerDatabase(siteId: number, path: string): Promise<boolean>;
  unregisterDatabase(siteId: number, path: string): Promise<void>;
}

export function tokenRecordJson(token: SqliteTokenRow, path: string, allowedOrigins: string[]) {
  return {
    id: token.id,
    path,
    name: token.name,
    permissions: token.permissions,
    requiresUserAuth: token.requiresUserAuth,
    allowedOrigins,
    createdAt: token.createdAt.toISOString(),
    lastUsedAt: iso(token.lastUsedAt),
    expiresAt: iso(token.expiresAt),
    revokedAt: iso(token.revokedAt),
  };
}

/** Install and the master key's token management (spec 4.8). */
export function tokenRoutes(deps: {
  config: Config;
  platform: Platform;
  tokens: SqliteTokens;
  registry: RouteRegistry;
  /** The site's file index: a database is one of its files (counted, listed, never served). */
  files: DatabaseFileIndex;
  grants: TokenGrants;
}): Router {
  const { config, platform, tokens, registry } = deps;
  const router = Router();
  const tags = ['SQLite tokens'];

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/auth/install',
    summary: 'Install a database on the site and mint a scoped token for it',
    description:
      'Creates the database at `path` when it does not exist yet (counted against the plan’s databases, per account) and mints a token scoped to it. ' +
      '`allowedOrigins` is ignored: a token accepts calls from the site’s subdomain and custom domains, computed at each call. ' +
      'Read tokens cannot call exec, batch or vacuum. The token is shown once. ' +
      'The token outlives a temporary key, so with one the session that minted it must be in sudo mode (password confirmed within the last 15 minutes, POST /api/v1/account/sudo); otherwise 403 SUDO_REQUIRED. Permanent keys need no such confirmation.',
    tags,
    auth: 'apiKey',
    secret: true,
    errors: ['INVALID_PATH', 'SQLITE_COUNT_LIMIT', 'SUDO_REQUIRED'],
    middleware: [jsonBody('16kb')],
    body: s.installBody,
    responses: {
      200: {
        description: 'The new token',
        schema: s.installResponse,
        // The minted token is the credential of the next calls (from one of the site's origins).
        links: {
          QueryWithTheToken: {
            to: { method: 'post', path: '/api/v1/sqlite/query' },
            parameters: { 'header.X-Sqlite-Token': '$response.body#/token' },
          },
          ExecWithTheToken: {
            to: { method: 'post', path: '/api/v1/sqlite/exec' },
            parameters: { 'header.X-Sqlite-Token': '$response.body#/token' },
          },
          BatchWithTheToken: {
            to: { method: 'post', path: '/api/v1/sqlite/batch' },
            parameters: { 'header.X-Sqlite-Token': '$response.body#/token' },
          },
          VersionWithTheToken: {
            to: { method: 'get', path: '/api/v1/sqlite/version' },
            parameters: { 'header.X-Sqlite-Token': '$response.body#/token' },
          },
          SchemaWithTheToken: {
            to: { method: 'get', path: '/api/v1/sqlite/schema' },
            parameters: { 'header.X-Sqlite-Token': '$response.body#/token' },
          },
          RegisterWithTheToken: {
            to: { method: 'post', path: '/api/v1/sqlite/auth/register' },
            description: 'The first user registered with the master key becomes the admin',
            parameters: { 'header.X-Sqlite-Token': '$response.body#/token' },
          },
          RevokeTheToken: {
            to: { method: 'delete', path: '/api/v1/sqlite/auth/tokens/:id' },
            parameters: { id: '$response.body#/tokenId' },
          },
        },
      },
    },
    handler: async ({ req, res, body }) => {
      // The token outlives a temporary key: its session must be in sudo mode (docs/developers/security.md "Sudo mode").
      requireSudoForLastingCredential(req.principal);
      const site = await siteForRequest(req, platform);
      const path = normalizeDatabasePath(body.path);
      // The file entry first (a file or folder in the way, or the file limit, refuse the install);
      // taken back if the install itself is refused.
      const added = await deps.files.registerDatabase(site.id, path);
      const installed = await tokens
        .install(site, {
          path,
          name: body.name,
          permissions: body.permissions,
          requireUserAuth: body.requireUserAuth,
          expiresInDays: body.expiresInDays,
        })
        .catch(async (err: unknown) => {
          if (added) await deps.files.unregisterDatabase(site.id, path);
          throw err;
        });
      res.json({
        success: true,
        token: installed.token,
        tokenId: installed.record.id,
        path: installed.database.path,
        permissions: installed.record.permissions,
        requiresUserAuth: installed.record.requiresUserAuth,
        allowedOrigins: await siteOrigins(config, platform, site.id),
        expiresAt: iso(installed.record.expiresAt),
      });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/auth/tokens',
    summary: 'List the site’s scoped tokens (active, revoked and expired)',
    description:
      'Every token of every database of the key’s site, oldest first; the tokens themselves are never shown again.',
    tags,
    auth: 'apiKey',
    responses: { 200: { description: 'The tokens', schema: s.tokensResponse } },
    handler: async ({ req, res }) => {
      const site = await siteForRequest(req, platform);
      const origins = await siteOrigins(config, platform, site.id);
      const rows = await tokens.list(site.id);
      res.json({ success: true, tokens: rows.map((r) => tokenRecordJson(r.token, r.path, origins)) });
    },
  });

  registry.add(router, {
    method: 'delete',
    path: '/api/v1/sqlite/auth/tokens/:id',
    params: { id: pathId('The token') },
    summary: 'Revoke a scoped token (irreversible)',
    description:
      'Later calls with the token get 401. Revoking a revoked token answers its first revocation time.',
    tags,
    auth: 'apiKey',
    errors: ['NOT_FOUND'],
    responses: { 200: { description: 'Revoked', schema: s.revokeResponse } },
    handler: async ({ req, res }) => {
      const { id } = parseOrThrow(s.tokenIdParam, req.params, 'path');
      const site = await siteForRequest(req, platform);
      const row = await tokens.revoke(site.id, id);
      // Other replicas hear it by NOTIFY; this one forgets before it answers.
      deps.grants.forgetSite(site.id);
      res.json({ success: true, tokenId: row.id, revokedAt: row.revokedAt!.toISOString() });
    },
  });
  return router;
}
