import { packageVersion } from '../version.js';
import client from 'prom-client';

// The registry, the metrics every domain shares (HTTP requests, the control-plane database's
// operations timed by dbOp) and build info. A domain's own metrics sit in its metrics.ts.

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

export const dbOperationDuration = new client.Histogram({
  name: 'hostplane_db_operation_duration_seconds',
  help: 'Control-plane database operation latency, by operation and outcome.',
  labelNames: ['operation', 'outcome'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

export const bodyTimeoutsTotal = new client.Counter({
  name: 'hostplane_http_body_timeouts_total',
  help: 'Requests whose body stalled (no byte in a window) or arrived below the minimum rate, answered 408 and closed, by reason.',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/** Request bodies the body deadline watches now (counted by it; read at scrape time). */
let bodiesWatchedNow = 0;
export const bodiesWatched = {
  add(): void {
    bodiesWatchedNow++;
  },
  remove(): void {
    bodiesWatchedNow--;
  },
};
new client.Gauge({
  name: 'hostplane_http_bodies_watched',
  help: 'Request bodies being received that the body deadline watches now (each let go when its body has arrived).',
  registers: [registry],
  collect() {
    this.set(bodiesWatchedNow);
  },
});

export const dependencyUnavailableTotal = new client.Counter({
  name: 'hostplane_dependency_unavailable_total',
  help: 'Requests answered 503 because a dependency was unreachable, by dependency (database, blob store).',
  labelNames: ['dependency'] as const,
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
