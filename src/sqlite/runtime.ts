import path from 'node:path';
import type { Config } from '../config/index.js';
import type { DomainModule } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import type { Platform, SiteEvents } from '../platform/index.js';
import { createRateLimiter } from '../ratelimit/index.js';
import type { Store } from '../store/index.js';
import { TokenGrants } from './grants.js';
import { ClusterSqliteTokens, type DatabaseResourceTarget } from './cluster.js';
import { LocalShard, localDatabaseFiles } from './local-shard.js';
import { sqliteModule } from './module.js';
import { Shards } from './shards.js';
import type { DatabaseFileIndex } from './token-routes.js';
import { SqliteTokens } from './tokens.js';
import { AUTH_RATE_LIMITS } from './user-routes.js';
import { SessionCache } from './sessions.js';
import { SiteHosts } from './site-hosts.js';
import { UserPools } from './users.js';

/** The SQLite domain in a running server: its module, and the shard's start and stop. */
export interface SqliteRuntime {
  module: DomainModule;
  /** Registers this process as a shard (role all), reachable at `url` unless configured otherwise. */
  startShard(url: string): Promise<void>;
  /** Best effort: a control-plane database already gone must not stop the rest of a close. */
  close(): Promise<void>;
}

/** Wires the SQLite domain for `startServer`: tokens, their grant cache, user pools, the shard. */
export async function sqliteRuntime(deps: {
  config: Config;
  store: Store;
  events: SiteEvents;
  platform: Platform;
  files: DatabaseFileIndex;
  logger: Logger;
  /** Cluster mode: a database's first install is followed by its SqliteDatabase resource. */
  resources?: DatabaseResourceTarget;
}): Promise<SqliteRuntime> {
  const { config, store, platform, logger } = deps;
  const tokens = deps.resources
    ? new ClusterSqliteTokens(store.db, platform, deps.resources)
    : new SqliteTokens(store.db, platform);
  const grants = new TokenGrants({ config, platform, tokens, logger });
  await grants.listen(store, deps.events);
  const siteHosts = new SiteHosts({ config, platform });
  siteHosts.listen(deps.events);
  // The pool tells the cache of this process at once; other replicas hear it by NOTIFY.
  const users = new UserPools(store.db, (databaseId) => sessions.changedHereNow(databaseId));
  const sessions = new SessionCache(users);
  await sessions.listen(store);
  const self = { name: config.sqliteShard.name, url: config.sqliteShard.url ?? '' };
  const shards = new Shards(store.db, self);
  const shard = new LocalShard(localDatabaseFiles(path.join(config.dataDir, 'sqlite')), (id) =>
    shards.acquire(id),
  );
  let started = false;
  return {
    module: sqliteModule({
      config,
      platform,
      tokens,
      grants,
      users,
      sessions,
      authLimiters: AUTH_RATE_LIMITS.map((limit) => createRateLimiter(store.db, limit)),
      shard,
      shards,
      logger,
      files: deps.files,
      siteHosts,
    }),
    async startShard(url) {
      self.url ||= url;
      await shards.start();
      started = true;
    },
    async close() {
      if (started)
        await shards.stop().catch((err: unknown) => logger.warn({ err }, 'sqlite shard stop incomplete'));
      await shard.close();
      await grants.close();
      siteHosts.close();
      await sessions.close();
    },
  };
}
