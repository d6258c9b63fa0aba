import { Router } from 'express';
import type { Config } from '../config/index.js';
import type { DomainModule } from '../http/index.js';
import type { Platform } from '../platform/index.js';
import type { RateLimiter } from '../ratelimit/index.js';
import { sqlitePreflight } from './access.js';
import { crudRoutes } from './crud-routes.js';
import { databaseRoutes } from './database-routes.js';
import type { PointInTimeRestore } from './replication/point-in-time.js';
import { restoreRoutes } from './restore-routes.js';
import { shardProxy } from './proxy.js';
import type { Shards } from './shards.js';
import type { SiteHosts } from './site-hosts.js';
import type { Logger } from '../observability/index.js';
import type { LocalShard } from './local-shard.js';
import { tokenRoutes, type DatabaseFileIndex } from './token-routes.js';
import type { TokenGrants } from './grants.js';
import type { SqliteTokens } from './tokens.js';
import { userRoutes } from './user-routes.js';
import type { SessionCache } from './sessions.js';
import type { UserPools } from './users.js';

const HOUR = 3_600_000;

/** The SQLite domain as a module of the app: tokens, end users, and the expired-sessions sweep. */
export function sqliteModule(deps: {
  config: Config;
  platform: Platform;
  tokens: SqliteTokens;
  grants: TokenGrants;
  users: UserPools;
  sessions: SessionCache;
  authLimiters: RateLimiter[];
  shard: LocalShard;
  shards: Shards;
  logger: Logger;
  files: DatabaseFileIndex;
  siteHosts: SiteHosts;
  restores: PointInTimeRestore;
}): DomainModule {
  const proxy = shardProxy({
    shards: deps.shards,
    secret: () => deps.platform.serverSecret('sqlite_shard_proxy'),
    sessions: deps.sessions,
    logger: deps.logger,
  });
  return {
    name: 'sqlite',
    routes: (registry) => {
      const router = Router();
      router.use(sqlitePreflight(deps));
      router.use(tokenRoutes({ ...deps, registry }));
      router.use(databaseRoutes({ ...deps, registry }));
      router.use(userRoutes({ ...deps, limiters: deps.authLimiters, registry }));
      router.use(crudRoutes({ ...deps, proxy, registry }));
      router.use(restoreRoutes({ ...deps, proxy, registry }));
      return router;
    },
    sweeps: [{ name: 'sqlite_sessions', everyMs: HOUR, run: () => deps.users.sweepExpired() }],
  };
}
