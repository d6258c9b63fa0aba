// The SQLite domain's public face: per-site databases over HTTP, their scoped tokens and
// end-user pools (control plane in PostgreSQL), and the guarded engine the shards run.
export { SqliteTokens, type InstallInput, type TokenGrant } from './tokens.js';
export { TokenGrants, type Grant } from './grants.js';
export { UserPools, SESSION_DAYS, SESSION_REFRESH_DAYS } from './users.js';
export {
  SqliteDatabases,
  DEFAULT_REPLICA_SETTINGS,
  type ReplicaSettings,
  type RemovedDatabase,
} from './databases.js';
export { ClusterSqliteTokens, type DatabaseResourceTarget } from './cluster.js';
export type { SqliteDatabaseRow } from './tables.js';
export type { DatabaseFileIndex } from './token-routes.js';
export { normalizeDatabasePath } from './db-path.js';
export { AUTH_RATE_LIMITS } from './user-routes.js';
export { sqliteModule } from './module.js';
export { LocalShard, localDatabaseFiles, type DatabaseFiles } from './local-shard.js';
export { Shards, LEASE_TTL_MS, type Shard } from './shards.js';
export { sqliteRuntime, type SqliteRuntime } from './runtime.js';
export { drainShard, type DrainResult } from './placement.js';
export { failOverLostShards, refreshShardGauges, startFailover, type FailoverOutcome } from './failover.js';
