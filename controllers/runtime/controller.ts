import type { Logger } from 'pino';
import type { KubeObject } from './informer.js';
import { withSpan } from '../../src/observability/index.js';
import { reconcileDuration, reconcileTotal, trackQueueDepth } from './metrics.js';
import { WorkQueue, type RateLimiter } from './workqueue.js';

export interface ReconcileResult {
  /** Reconcile the key again after this delay even if nothing changes (e.g. to poll progress). */
  requeueAfterMs?: number;
}

export interface Reconciler {
  /** Brings the object named by `key` (`namespace/name`) to its desired state; throws to be retried. */
  reconcile(key: string): Promise<ReconcileResult | void>;
}

export interface ControllerOptions {
  name: string;
  reconciler: Reconciler;
  /** Concurrent reconciles (of different keys); default 2. */
  workers?: number;
  rateLimiter?: RateLimiter;
  logger: Logger;
}

/** The cache key of an object: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(obj: KubeObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error('object has no metadata.name');
  const namespace = obj.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/** The inverse of objectKey(): `ns/name` → { namespace: 'ns', name }, `name` → { namespace: undefined, name }. */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const parts = key.split('/');
  if (parts.length === 1 && parts[0]) return { namespace: undefined, name: parts[0] };
  if (parts.length === 2 && parts[0] && parts[1]) return { namespace: parts[0], name: parts[1] };
  throw new Error(`invalid object key ${JSON.stringify(key)}: expected "namespace/name" or "name"`);
}

/**
 * Runs a reconciler over a work queue with a fixed number of workers: get → reconcile → done.
 * Failures are retried with the rate limiter's per-key back-off; successes reset it.
 */
export class Controller {
  readonly queue: WorkQueue;
  /** For logs and metrics, e.g. 'site'. */
  readonly name: string;
  private readonly reconciler: Reconciler;
  private readonly workers: number;
  private readonly logger: Logger;
  private workerLoops: Promise<void>[] = [];
  private untrackQueueDepth: (() => void) | undefined;

  constructor(options: ControllerOptions) {
    this.name = options.name;
    this.reconciler = options.reconciler;
    this.workers = options.workers ?? 2;
    if (!Number.isInteger(this.workers) || this.workers < 1) {
      throw new Error(`controller ${options.name}: workers must be a positive integer`);
    }
    this.logger = options.logger.child({ controller: options.name });
    this.queue = new WorkQueue({ name: options.name, rateLimiter: options.rateLimiter });
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  start(): void {
    if (this.workerLoops.length > 0) throw new Error(`controller ${this.name} already started`);
    this.untrackQueueDepth = trackQueueDepth(this.name, () => this.queue.len());
    for (let worker = 0; worker < this.workers; worker++) this.workerLoops.push(this.runWorker());
    this.logger.info({ workers: this.workers }, 'controller started');
  }

  /** Shuts the queue down and waits for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.workerLoops);
    this.untrackQueueDepth?.();
    this.untrackQueueDepth = undefined;
    this.logger.info('controller stopped');
  }

  private async runWorker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.processKey(key);
      } finally {
        this.queue.done(key);
      }
    }
  }

  private async processKey(key: string): Promise<void> {
    const stopTimer = reconcileDuration.startTimer({ controller: this.name });
    try {
      // One span per pass: the database and Kubernetes calls it makes nest under it.
      const result = await withSpan(
        'reconcile',
        { 'hostplane.controller': this.name, 'hostplane.key': key },
        () => this.reconciler.reconcile(key),
      );
      this.queue.forget(key);
      const requeueAfterMs = result?.requeueAfterMs;
      if (requeueAfterMs !== undefined) {
        this.queue.addAfter(key, requeueAfterMs);
        reconcileTotal.inc({ controller: this.name, result: 'requeue' });
      } else {
        reconcileTotal.inc({ controller: this.name, result: 'success' });
      }
    } catch (err) {
      const retries = this.queue.numRequeues(key);
      this.queue.addRateLimited(key);
      reconcileTotal.inc({ controller: this.name, result: 'error' });
      this.logger.error({ err, key, retries: retries + 1 }, 'reconcile failed; retrying with back-off');
    } finally {
      stopTimer();
    }
  }
}
