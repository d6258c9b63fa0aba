import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { makeKubeApi } from '../../src/kube/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { controllerLeader } from './metrics.js';

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  leaseName: string;
  /** Unique per candidate (e.g. the pod name). */
  identity: string;
  /** How long non-leaders wait after last seeing the lease change before taking it over; default 15. */
  leaseDurationSeconds?: number;
  /** How long the leader keeps retrying a failing renewal before it gives up leading; default 10_000. */
  renewDeadlineMs?: number;
  /** Pause between acquire and renew attempts; default 2_000. */
  retryPeriodMs?: number;
  /**
   * Whether stop() releases a held lease so that another candidate takes over at once (default
   * true). Without it the lease must expire first, as after a crash.
   */
  releaseOnStop?: boolean;
  /** Per-call deadline of the Lease calls (each is also bounded by what is left of renewDeadline). */
  requestTimeoutMs?: number;
  logger: Logger;
  onStartedLeading: () => void;
  /** Called when leadership is lost or released (before the release is written). */
  onStoppedLeading: () => void;
}

/** client-go's JitterFactor for the retry period: waits are spread over [retry, 2.2 × retry). */
const RETRY_JITTER_FACTOR = 1.2;

function errorCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** Monotonic milliseconds: lease expiry must not depend on the wall clock jumping. */
const monotonicNow = (): number => performance.now();

/**
 * Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics:
 * - a candidate takes the lease when it is missing, held by itself, released (no holder), or has not
 *   changed for leaseDurationSeconds as measured by the candidate's own clock since it last saw a
 *   change (clocks of different machines are never compared);
 * - every write carries the observed resourceVersion, so of two candidates racing only one wins
 *   (the other gets 409 Conflict);
 * - the leader renews every retryPeriod and gives up leading if it could not renew for renewDeadline,
 *   which is shorter than the lease duration, so it stops before anyone else may take over.
 */
export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private readonly namespace: string;
  private readonly leaseName: string;
  private readonly identity: string;
  private readonly leaseDurationSeconds: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly releaseOnStop: boolean;
  private readonly logger: Logger;
  private readonly onStartedLeading: () => void;
  private readonly onStoppedLeading: () => void;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  /** We hold the lease (as far as we know). */
  private holdsLease = false;
  /** onStartedLeading was called and onStoppedLeading not yet. */
  private notifiedLeading = false;
  /** The lease as last read or written, and the local time at which it was seen to change. */
  private observedLease: V1Lease | undefined;
  private observedAt = 0;

  constructor(options: LeaderElectionOptions) {
    this.namespace = options.namespace;
    this.leaseName = options.leaseName;
    this.identity = options.identity;
    this.leaseDurationSeconds = options.leaseDurationSeconds ?? 15;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.releaseOnStop = options.releaseOnStop ?? true;
    this.onStartedLeading = options.onStartedLeading;
    this.onStoppedLeading = options.onStoppedLeading;
    if (!options.identity) throw new Error('leader election: identity must not be empty');
    // The same checks as client-go: otherwise a leader could still act after others took over.
    if (this.leaseDurationSeconds * 1000 <= this.renewDeadlineMs) {
      throw new Error('leader election: leaseDurationSeconds must be longer than renewDeadlineMs');
    }
    if (this.renewDeadlineMs <= RETRY_JITTER_FACTOR * this.retryPeriodMs) {
      throw new Error(`leader election: renewDeadlineMs must exceed ${RETRY_JITTER_FACTOR} × retryPeriodMs`);
    }
    this.logger = options.logger.child({
      lease: `${options.namespace}/${options.leaseName}`,
      identity: options.identity,
    });
    this.api = makeKubeApi(options.kubeConfig, CoordinationV1Api, {
      requestTimeoutMs: options.requestTimeoutMs,
    });
  }

  /** Runs the acquire/renew loop in the background until stop(). */
  start(): void {
    if (this.loop) throw new Error('leader elector already started');
    controllerLeader.set({ lease: this.leaseName }, 0);
    this.loop = this.run().catch((err: unknown) => {
      // run() handles its own errors; reaching here is a bug, but must not become an unhandled rejection.
      this.logger.error({ err }, 'leader election loop crashed');
    });
  }

  isLeader(): boolean {
    return this.notifiedLeading;
  }

  /**
   * Stops; if leading, calls onStoppedLeading and releases the lease (holder cleared, duration 1 s)
   * so that another candidate takes over at once.
   */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) {
      await this.loop;
      return;
    }
    this.stopping.abort();
    await this.loop;
    if (!this.holdsLease) return;
    this.stopLeading();
    if (this.releaseOnStop) await this.release();
    this.holdsLease = false;
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (!(await this.acquire())) return;
      this.holdsLease = true;
      this.logger.info('became leader');
      controllerLeader.set({ lease: this.leaseName }, 1);
      this.notifiedLeading = true;
      this.callback('onStartedLeading', this.onStartedLeading);

      await this.renewUntilLost();
      if (this.stopped) return; // stop() finishes: callbacks, release.
      this.holdsLease = false;
      this.logger.warn(
        { renewDeadlineMs: this.renewDeadlineMs },
        'could not renew the lease in time; stopped leading',
      );
      this.stopLeading();
    }
  }

  private stopLeading(): void {
    controllerLeader.set({ lease: this.leaseName }, 0);
    if (!this.notifiedLeading) return;
    this.notifiedLeading = false;
    this.callback('onStoppedLeading', this.onStoppedLeading);
  }

  private callback(name: string, callback: () => void): void {
    try {
      callback();
    } catch (err) {
      this.logger.error({ err, callback: name }, 'leader election callback threw');
    }
  }

  /** Retries until the lease is ours (true) or stop() is called (false). */
  private async acquire(): Promise<boolean> {
    this.logger.info('trying to acquire the lease');
    while (!this.stopped) {
      if (await this.tryAcquireOrRenew(this.renewDeadlineMs)) {
        if (!this.stopped) return true;
        // Acquired just as stop() was called: remember it, so that stop() releases it.
        this.holdsLease = true;
        return false;
      }
      await this.pause(this.retryPeriodMs * (1 + Math.random() * RETRY_JITTER_FACTOR));
    }
    return false;
  }

  /** Renews every retryPeriod; returns when a renewal could not succeed within renewDeadline, or on stop(). */
  private async renewUntilLost(): Promise<void> {
    while (!this.stopped) {
      await this.pause(this.retryPeriodMs);
      const deadline = monotonicNow() + this.renewDeadlineMs;
      let renewed = false;
      while (!this.stopped && !renewed) {
        const remainingMs = deadline - monotonicNow();
        if (remainingMs <= 0) return;
        renewed = await this.tryAcquireOrRenew(remainingMs);
        if (!renewed) await this.pause(Math.min(this.retryPeriodMs, deadline - monotonicNow()));
      }
    }
  }

  private async pause(ms: number): Promise<void> {
    if (ms <= 0) return;
    await sleep(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }

  /** One attempt to take or keep the lease; false when someone else holds it or the API failed. */
  private async tryAcquireOrRenew(timeoutMs: number): Promise<boolean> {
    const now = new V1MicroTime(Date.now());
    let current: V1Lease;
    try {
      current = await withTimeout(
        this.api.readNamespacedLease({ name: this.leaseName, namespace: this.namespace }),
        timeoutMs,
      );
    } catch (err) {
      if (errorCode(err) !== 404) {
        this.logger.warn({ err }, 'could not read the lease');
        return false;
      }
      return this.createLease(now, timeoutMs);
    }

    if (current.metadata?.resourceVersion !== this.observedLease?.metadata?.resourceVersion) {
      this.observedLease = current;
      this.observedAt = monotonicNow();
    }
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const durationMs = (spec.leaseDurationSeconds ?? this.leaseDurationSeconds) * 1000;
    if (holder && holder !== this.identity && monotonicNow() < this.observedAt + durationMs) {
      this.logger.debug({ holder }, 'lease is held by another candidate');
      return false;
    }

    const renewing = holder === this.identity;
    const desired: V1Lease = {
      ...current,
      spec: {
        ...spec,
        holderIdentity: this.identity,
        leaseDurationSeconds: this.leaseDurationSeconds,
        renewTime: now,
        acquireTime: renewing && spec.acquireTime ? spec.acquireTime : now,
        leaseTransitions: renewing ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      // `current` carries its resourceVersion: if anyone wrote the lease since, this is a 409.
      const written = await withTimeout(
        this.api.replaceNamespacedLease({ name: this.leaseName, namespace: this.namespace, body: desired }),
        timeoutMs,
      );
      this.observe(written);
      if (!renewing) this.logger.info({ previousHolder: holder || undefined }, 'acquired the lease');
      return true;
    } catch (err) {
      if (errorCode(err) === 409) this.logger.debug('another candidate wrote the lease first');
      else this.logger.warn({ err }, 'could not update the lease');
      return false;
    }
  }

  private async createLease(now: V1MicroTime, timeoutMs: number): Promise<boolean> {
    const lease: V1Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.leaseName, namespace: this.namespace },
      spec: {
        holderIdentity: this.identity,
        leaseDurationSeconds: this.leaseDurationSeconds,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      },
    };
    try {
      this.observe(
        await withTimeout(
          this.api.createNamespacedLease({ namespace: this.namespace, body: lease }),
          timeoutMs,
        ),
      );
      this.logger.info('created the lease');
      return true;
    } catch (err) {
      if (errorCode(err) === 409) this.logger.debug('another candidate created the lease first');
      else this.logger.warn({ err }, 'could not create the lease');
      return false;
    }
  }

  private observe(lease: V1Lease): void {
    this.observedLease = lease;
    this.observedAt = monotonicNow();
  }

  /** Hands the lease back: no holder and a 1 s duration, so that the next candidate takes it at once. */
  private async release(): Promise<void> {
    const observed = this.observedLease;
    if (!observed || observed.spec?.holderIdentity !== this.identity) return;
    const now = new V1MicroTime(Date.now());
    const released: V1Lease = {
      ...observed,
      spec: {
        ...observed.spec,
        holderIdentity: undefined,
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
      },
    };
    try {
      this.observe(
        await withTimeout(
          this.api.replaceNamespacedLease({
            name: this.leaseName,
            namespace: this.namespace,
            body: released,
          }),
          this.renewDeadlineMs,
        ),
      );
      this.logger.info('released the lease');
    } catch (err) {
      // A 409 means someone else already wrote it (took it over); anything else leaves it to expire.
      this.logger.warn({ err }, 'could not release the lease; it will expire');
    }
  }
}

/**
 * Rejects after `ms` if `promise` has not settled: a renewal must give up by the renew deadline,
 * sooner than the client's per-call deadline (which then aborts the request itself).
 */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`lease request timed out after ${Math.round(ms)} ms`)), ms);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
