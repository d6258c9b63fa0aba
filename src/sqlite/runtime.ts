import { mkdir } from 'node:fs/promises';
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
import { startFailover } from './failover.js';
import { initShardMetrics } from './metrics.js';
import { PointInTimeRestore } from './replication/point-in-time.js';
import { startReplication } from './replication/replicator.js';
import { keepShardInLine, shardOwnership } from './replication/upkeep.js';
import { removeLeftovers } from './replication/opener.js';
import type { DatabaseFileIndex } from './token-routes.js';
import { SqliteTokens } from './tokens.js';
import { AUTH_RATE_LIMITS } from './user-routes.js';
import { SessionCache } from './sessions.js';
import { SiteHosts } from './site-hosts.js';
import { UserPools } from './users.js';

/** The SQLite domain in a running server: its module, and the shard's start and stop. */
export interface SqliteRuntime {
  module: DomainModule;
  /**
   * Registers this process as a shard, reachable at `url` unless configured otherwise: starts
   * replication, then opens (restoring where the file is missing) every database placed here.
   */
  startShard(url: string): Promise<void>;
  /** True once startShard has restored and leased this shard's databases. */
  ready(): boolean;
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
  const shards = new Shards(store.db, self, { maxDatabases: config.sqliteShard.maxDatabases, logger });
  const dir = path.join(config.dataDir, 'sqlite');
  const shard = new LocalShard(localDatabaseFiles(dir), (id) => shards.acquire(id));
  let started = false;
  let ready = false;
  let stopUpkeep: (() => Promise<void>) | undefined;
  let failover: ReturnType<typeof startFailover> | undefined;
  let replicating = false;
  const ownership = shardOwnership(store.db, shards);
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
      restores: new PointInTimeRestore({
        db: store.db,
        shard,
        secret: () => platform.serverSecret('sqlite_restore_bookmark'),
        retentionHours: config.sqliteReplication.retentionHours,
        logger,
      }),
    }),
    async startShard(url) {
      self.url ||= url;
      initShardMetrics();
      await mkdir(dir, { recursive: true });
      // Once, even when a start that lost PostgreSQL half-way is tried again.
      if (!replicating) {
        replicating = true;
        shard.replicateWith(await startReplication({ config, dir, logger }), ownership);
      }
      await shards.start();
      started = true;
      stopUpkeep = await keepShardInLine({ store, shards, shard, ownership, logger });
      await openPlacedDatabases(shards, shard, dir, logger);
      // Every shard watches for lost ones; a round takes the placement lock, so one decides.
      // With the failover off (0) it still reports lost shards for the alerts.
      if (!failover)
        failover = startFailover({
          db: store.db,
          afterMs: config.sqliteShard.failoverAfterMs,
          maxDatabases: config.sqliteShard.maxDatabases,
          logger,
        });
      ready = true;
    },
    ready: () => ready,
    async close() {
      ready = false;
      await failover?.stop();
      await stopUpkeep?.().catch(() => undefined);
      // The graceful stop: writes stopped, a last sync of each database, Litestream stopped —
      // and only then the leases released, so no other shard opens a file with an unsynced tail.
      const unsynced = await shard.close().catch((err: unknown) => {
        logger.error({ err }, 'sqlite shard close incomplete');
        return [];
      });
      if (unsynced.length > 0)
        logger.error(
          { databases: unsynced },
          'sqlite databases whose last sync failed keep their leases until they run out',
        );
      if (started)
        await shards
          .stop(unsynced)
          .catch((err: unknown) => logger.warn({ err }, 'sqlite shard stop incomplete'));
      await grants.close();
      siteHosts.close();
      await sessions.close();
    },
  };
}

/**
 * Opens every database placed on this shard before it reports ready: a missing file is restored
 * from its replica now, not on a client's first call, and a replica's tail is caught up at once.
 * A database that cannot be opened is reported (its row, a metric) and does not hold the rest up.
 */
async function openPlacedDatabases(
  shards: Shards,
  shard: LocalShard,
  dir: string,
  logger: Logger,
): Promise<void> {
  const removed = await removeLeftovers(dir, (ids) => shards.ownedElsewhere(ids));
  const ids = await shards.placedHere();
  if (removed.length > 0)
    logger.info({ files: removed.length }, 'sqlite shard removed files of databases placed elsewhere');
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++]!;
      await shard.handle({ id }, null).catch((err: unknown) => {
        logger.error({ err, databaseId: id }, 'sqlite database placed here could not be opened at start');
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, ids.length) }, worker));
  if (ids.length > 0) logger.info({ databases: ids.length }, 'sqlite shard opened its databases');
}
