/**
 * A rate-limited, de-duplicating work queue with the semantics of client-go's workqueue:
 * - a key is never handed to two workers at once;
 * - adding a key that is already queued is a no-op;
 * - adding a key that is being processed marks it dirty, and it is queued again (once) when the
 *   worker calls done().
 */

export interface RateLimiter {
  /** The delay before `key` may be retried; counts one more failure for it. */
  when(key: string): number;
  /** Resets the key's failure count (it succeeded). */
  forget(key: string): void;
  /** How many failures have been counted for `key` since it was last forgotten. */
  retries(key: string): number;
}

/** Per-key exponential back-off: base * 2^failures, capped. */
export class ExponentialBackoffRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly baseDelayMs = 100,
    private readonly maxDelayMs = 300_000,
  ) {}

  when(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    // 2^failures overflows to Infinity long before it matters; the cap keeps the delay finite.
    return Math.min(this.baseDelayMs * 2 ** failures, this.maxDelayMs);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

export interface WorkQueueOptions {
  name: string;
  rateLimiter?: RateLimiter;
}

interface DelayedAdd {
  readyAt: number;
  timer: NodeJS.Timeout;
}

export class WorkQueue {
  readonly name: string;
  private readonly rateLimiter: RateLimiter;
  /** Keys waiting for a worker, in order. */
  private readonly queue: string[] = [];
  /** Keys that need processing: queued ones, and processing ones added again meanwhile. */
  private readonly dirty = new Set<string>();
  /** Keys a worker holds between get() and done(). */
  private readonly processing = new Set<string>();
  /** Workers blocked in get(). */
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private readonly delayed = new Map<string, DelayedAdd>();
  private isShuttingDown = false;

  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.rateLimiter = options.rateLimiter ?? new ExponentialBackoffRateLimiter();
  }

  get shuttingDown(): boolean {
    return this.isShuttingDown;
  }

  add(key: string): void {
    if (this.isShuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    // A worker holds it: done() queues it again, so no two workers ever see it at once.
    if (this.processing.has(key)) return;
    this.queue.push(key);
    this.handOut();
  }

  /** Adds `key` after `delayMs`; of several pending delayed adds of one key, the earliest wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.isShuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const readyAt = Date.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending) {
      if (pending.readyAt <= readyAt) return;
      clearTimeout(pending.timer);
    }
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    // A pending retry must not keep the process alive on its own.
    timer.unref();
    this.delayed.set(key, { readyAt, timer });
  }

  addRateLimited(key: string): void {
    this.addAfter(key, this.rateLimiter.when(key));
  }

  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.retries(key);
  }

  /**
   * The next key to process; the caller must call done(key) when finished. Waits while the queue
   * is empty; resolves undefined once the queue is shut down (keys still queued are dropped: the
   * controllers are level-triggered and resync on start).
   */
  get(): Promise<string | undefined> {
    if (this.isShuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) return Promise.resolve(this.startProcessing(key));
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.isShuttingDown) {
      this.queue.push(key);
      this.handOut();
    }
  }

  /** Keys waiting for a worker (not those being processed or waiting for a delay). */
  len(): number {
    return this.queue.length;
  }

  shutDown(): void {
    this.isShuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const wake of this.waiters.splice(0)) wake(undefined);
  }

  private startProcessing(key: string): string {
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  /** Gives queued keys to workers blocked in get(). */
  private handOut(): void {
    while (this.waiters.length > 0 && this.queue.length > 0) {
      const wake = this.waiters.shift()!;
      wake(this.startProcessing(this.queue.shift()!));
    }
  }
}
