import { Router } from 'express';
import { type RouteRegistry } from '../http/index.js';
import { siteForRequest, type Platform } from '../platform/index.js';
import { cappedPlan } from './grants.js';
import type { LocalShard } from './local-shard.js';
import * as s from './schemas.js';
import type { SqliteTokens } from './tokens.js';

/**
 * The site's databases for its owner (extension: the spec lists tokens, not databases). A database
 * outlives its tokens — revoked or expired, they leave it and its data in place and counted against
 * the plan — so the token list cannot stand in for this one, nor give sizes, caps or pools.
 */
export function databaseRoutes(deps: {
  platform: Platform;
  tokens: SqliteTokens;
  shard: LocalShard;
  registry: RouteRegistry;
}): Router {
  const { platform, tokens, shard, registry } = deps;
  const router = Router();

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/databases',
    summary: 'List the site’s databases with size, caps and users (extension)',
    description:
      'Every database of the key’s site, oldest first, with its size and change counter against the caps in effect, its end users and active tokens. ' +
      'Size and version are live when the answering replica owns the database; otherwise as its shard last reported them (each lease round, about every 10 s), 0 before it was first opened. ' +
      'Answered without a hop to another shard.',
    tags: ['SQLite tokens'],
    auth: 'apiKey',
    responses: { 200: { description: 'The databases', schema: s.databasesResponse } },
    handler: async ({ req, res }) => {
      const site = await siteForRequest(req, platform);
      const [rows, usage] = await Promise.all([tokens.databasesOf(site.id), platform.getUsage(site.id)]);
      const databases = await Promise.all(
        rows.map(async ({ database, users, activeTokens }) => {
          const live = await shard.stateOf(database.id).catch(() => undefined);
          const caps = usage ? cappedPlan(usage.plan, database) : undefined;
          return {
            path: database.path,
            sizeBytes: live?.sizeBytes ?? database.sizeBytes,
            maxSizeBytes: caps ? caps.maxSqliteBytes : database.maxSizeBytes,
            version: live?.version ?? database.version,
            users,
            maxUsers: caps ? caps.maxSqliteUsers : database.maxUsers,
            activeTokens,
            createdAt: database.createdAt.toISOString(),
          };
        }),
      );
      res.json({ success: true, databases, maxDatabases: usage?.plan.maxSqliteDatabases ?? null });
    },
  });
  return router;
}
