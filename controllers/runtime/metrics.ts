import client from 'prom-client';
import { registry } from '../../src/observability/index.js';

export const controllerLeader = new client.Gauge({
  name: 'hostplane_controller_leader',
  help: 'Whether this process holds the leader-election lease (1) or not (0), by lease.',
  labelNames: ['lease'] as const,
  registers: [registry],
});

export const reconcileTotal = new client.Counter({
  name: 'hostplane_controller_reconcile_total',
  help: 'Reconciles finished, by controller and result (success, error, requeue).',
  labelNames: ['controller', 'result'] as const,
  registers: [registry],
});

export const reconcileDuration = new client.Histogram({
  name: 'hostplane_controller_reconcile_duration_seconds',
  help: 'Time spent in one reconcile, by controller.',
  labelNames: ['controller'] as const,
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

/** Queue lengths read at scrape time, so keys added by delayed (back-off) timers are counted too. */
const queueDepthSources = new Map<string, () => number>();

export const queueDepth = new client.Gauge({
  name: 'hostplane_controller_queue_depth',
  help: 'Keys waiting in the work queue for a worker, by controller.',
  labelNames: ['controller'] as const,
  registers: [registry],
  collect() {
    for (const [controller, depth] of queueDepthSources) this.set({ controller }, depth());
  },
});

/** Reports `depth()` as the controller's queue depth until the returned function is called. */
export function trackQueueDepth(controller: string, depth: () => number): () => void {
  queueDepthSources.set(controller, depth);
  return () => {
    if (queueDepthSources.get(controller) !== depth) return;
    queueDepthSources.delete(controller);
    queueDepth.remove({ controller });
  };
}

export type WatchRestartReason = 'relist_410' | 'error' | 'timeout';

export const watchRestartsTotal = new client.Counter({
  name: 'hostplane_controller_watch_restarts_total',
  help: 'Informer watches restarted, by informer and reason (relist_410: resource version expired, error: failed or broken connection, timeout: closed cleanly).',
  labelNames: ['informer', 'reason'] as const,
  registers: [registry],
});

export const resyncTotal = new client.Counter({
  name: 'hostplane_controller_resync_total',
  help: 'Periodic resync passes finished, by controller and result (success, error).',
  labelNames: ['controller', 'result'] as const,
  registers: [registry],
});
