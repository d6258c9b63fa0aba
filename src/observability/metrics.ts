import { packageVersion } from '../version.js';
import client from 'prom-client';

/** One registry per process: every role in it reports to the same /metrics. */
export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

/** Run before hot-path metrics are read: local tallies are folded in (hot-path.ts). */
export const foldBeforeCollect = new Set<() => void>();
/** The `collect` of every metric fed by tallies (idempotent: a fold empties what it folded). */
export const foldTallies = () => {
  for (const fold of foldBeforeCollect) fold();
};

export const httpRequestsTotal = new client.Counter({
  name: 'hostplane_http_requests_total',
  collect: foldTallies,
  help: 'HTTP requests answered, by role, method, route pattern and status code.',
  labelNames: ['role', 'method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpRequestDuration = new client.Histogram({
  name: 'hostplane_http_request_duration_seconds',
  collect: foldTallies,
  help: 'HTTP request duration, by role, method, route pattern and status code.',
  labelNames: ['role', 'method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const blobOperationDuration = new client.Histogram({
  name: 'hostplane_blob_operation_duration_seconds',
  help: 'Blob store operation latency, by store kind, operation and outcome.',
  labelNames: ['store', 'operation', 'outcome'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});

export const dbOperationDuration = new client.Histogram({
  name: 'hostplane_db_operation_duration_seconds',
  help: 'Control-plane database operation latency, by operation and outcome.',
  labelNames: ['operation', 'outcome'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

export const edgeCacheEvents = new client.Counter({
  name: 'hostplane_edge_cache_events_total',
  collect: foldTallies,
  help: 'Edge cache lookups, by cache (manifest, blob) and result (hit, miss).',
  labelNames: ['cache', 'result'] as const,
  registers: [registry],
});

export const dependencyUnavailableTotal = new client.Counter({
  name: 'hostplane_dependency_unavailable_total',
  help: 'Requests answered 503 because a dependency was unreachable, by dependency (database, blob store).',
  labelNames: ['dependency'] as const,
  registers: [registry],
});

export const quotaRejectionsTotal = new client.Counter({
  name: 'hostplane_quota_rejections_total',
  help: 'Writes refused because a plan limit would be exceeded, by limit.',
  labelNames: ['limit'] as const,
  registers: [registry],
});

export const tempPagesSweptTotal = new client.Counter({
  name: 'hostplane_temp_pages_swept_total',
  help: 'Expired temporary pages deleted by the sweeper.',
  registers: [registry],
});

/** The running version (package.json), as `hostplane_build_info{version} 1`. */
export const buildInfo = new client.Gauge({
  name: 'hostplane_build_info',
  help: 'Always 1; the version label says which Hostplane release this process runs.',
  labelNames: ['version'] as const,
  registers: [registry],
});
buildInfo.set({ version: packageVersion() }, 1);
