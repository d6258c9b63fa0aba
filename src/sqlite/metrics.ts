import client from 'prom-client';
import { foldTallies, registry } from '../observability/index.js';

// The SQLite domain's metrics: calls and their statements, the shard's queue and leases, the
// forwarding to owners, and the three caches of the CRUD path (grants, sessions, preflight hosts).

export const statementsTotal = new client.Counter({
  name: 'hostplane_sqlite_statements_total',
  collect: foldTallies,
  help: 'SQLite calls by operation and outcome (ok, sql, denied, statement, timeout, size, busy, overloaded, error)',
  labelNames: ['op', 'outcome'] as const,
  registers: [registry],
});

export const statementDuration = new client.Histogram({
  name: 'hostplane_sqlite_statement_duration_seconds',
  collect: foldTallies,
  help: 'SQLite calls on the owning shard, queue wait in the worker included',
  labelNames: ['op'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

export const guardRefusals = new client.Counter({
  name: 'hostplane_sqlite_guard_refusals_total',
  help: 'Statements the guard refused, by the class of what it refused (pragma, function, table, attach, …)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const queueWait = new client.Histogram({
  name: 'hostplane_sqlite_queue_wait_seconds',
  collect: foldTallies,
  help: 'Time a SQLite call waited behind other calls of its worker (the per-database write serialization)',
  labelNames: ['op'] as const,
  buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
  registers: [registry],
});

export const writeGroupSize = new client.Histogram({
  name: 'hostplane_sqlite_write_group_size',
  collect: foldTallies,
  help: 'SQLite exec calls by how many exec calls of their database shared their COMMIT (group commit; 1: alone)',
  buckets: [1, 2, 4, 8, 16, 32, 64],
  registers: [registry],
});

export const proxyHops = new client.Counter({
  name: 'hostplane_sqlite_proxy_hops_total',
  help: 'SQLite calls forwarded to the shard that owns the database, by outcome',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const leasesHeld = new client.Gauge({
  name: 'hostplane_sqlite_leases_held',
  help: 'SQLite databases this process owns (holds a live lease for)',
  registers: [registry],
});

export const grantLookups = new client.Counter({
  name: 'hostplane_sqlite_grant_lookups_total',
  collect: foldTallies,
  help: 'Scoped-token resolutions by result (hit: from memory, miss: read from PostgreSQL)',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const sessionLookups = new client.Counter({
  name: 'hostplane_sqlite_session_lookups_total',
  collect: foldTallies,
  help: 'User sessions checked on CRUD calls, by result (hit: from memory, miss: read from PostgreSQL)',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const preflightHostLookups = new client.Counter({
  name: 'hostplane_sqlite_preflight_host_lookups_total',
  collect: foldTallies,
  help: 'Whether a preflight Origin’s host is a site, by result (hit: from memory, miss: read from PostgreSQL)',
  labelNames: ['result'] as const,
  registers: [registry],
});

// Replication (src/sqlite/replication): Litestream's own metrics are on its port; these are what
// the shard sees of it.
export const replicationLag = new client.Gauge({
  name: 'hostplane_sqlite_replication_lag_seconds',
  help: 'Oldest time since a replicating database of this shard was last in step with its replica (0: all in step)',
  registers: [registry],
});

export const replicatedDatabases = new client.Gauge({
  name: 'hostplane_sqlite_replicated_databases',
  help: 'Databases this shard has registered with Litestream',
  registers: [registry],
});

export const restoresTotal = new client.Counter({
  name: 'hostplane_sqlite_restores_total',
  help: 'Restores from the replica by kind (start: a file missing on open, point_in_time) and outcome (restored, none, failed)',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

export const restoreFailures = new client.Counter({
  name: 'hostplane_sqlite_restore_failures_total',
  help: 'Databases not served because their replica could not be restored or registered',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/**
 * A shard's alerting counters at zero from its start, so a rule over them (increase(...) > 0)
 * reads a series that exists before the first failure.
 */
export function initShardMetrics(): void {
  for (const reason of ['register_failed', 'restore_failed', 'file_lost']) restoreFailures.inc({ reason }, 0);
}

export const restoreDuration = new client.Histogram({
  name: 'hostplane_sqlite_restore_duration_seconds',
  help: 'Time to restore a database from its replica (download, integrity check, rename)',
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
  registers: [registry],
});

export const litestreamRestarts = new client.Counter({
  name: 'hostplane_sqlite_litestream_restarts_total',
  help: 'Times the shard restarted its Litestream process after it exited on its own',
  registers: [registry],
});
export const placementRefused = new client.Counter({
  name: 'hostplane_sqlite_placement_refused_total',
  help: 'Calls to a database not placed yet that found no shard to place it on, by reason (full: every live shard holds its cap; no_shard: no live shard)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

// The failover of lost shards (src/sqlite/failover.ts), counted by the shard whose round acted.
export const failoversTotal = new client.Counter({
  name: 'hostplane_sqlite_failovers_total',
  help: 'Failover rounds that acted on a lost shard, by outcome (moved: all its databases placed elsewhere; partial: some stay; blocked: none could move; error: the round failed)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const failoverDatabases = new client.Counter({
  name: 'hostplane_sqlite_failover_databases_total',
  help: 'Databases of lost shards by result (moved; no_capacity, no_replica: left unserved, counted once when they start to be)',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const failoverSeconds = new client.Histogram({
  name: 'hostplane_sqlite_failover_seconds',
  help: 'Time from a shard’s last sign of life (its stop or last heartbeat) to its databases placed on another shard',
  buckets: [5, 10, 15, 20, 25, 30, 40, 60, 120, 300],
  registers: [registry],
});

// What the failover sees, set by every shard's failover loop (src/sqlite/failover.ts) from
// PostgreSQL, so every shard reports the same picture: alert on max by (namespace).
export const shardsByState = new client.Gauge({
  name: 'hostplane_sqlite_shards',
  help: 'SQLite shards by state (live: heartbeat within two renewal rounds; lost: gone while databases are still placed on it, unserved until it returns or the failover moves them; left: gone, holding none)',
  labelNames: ['state'] as const,
  registers: [registry],
});

export const failoverBlockedDatabases = new client.Gauge({
  name: 'hostplane_sqlite_failover_blocked_databases',
  help: 'Databases of lost shards the failover cannot move, by reason (no_capacity: no live shard has room; no_replica: their only copy is on the lost shard)',
  labelNames: ['reason'] as const,
  registers: [registry],
});
