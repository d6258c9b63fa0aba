import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config, KubernetesConfig } from '../src/config/index.js';
import type { FormsService } from '../src/forms/index.js';
import type { Platform } from '../src/platform/index.js';
import type { SqliteDatabases } from '../src/sqlite/index.js';
import {
  ResyncTracker,
  startControllerSet,
  type ControllerSet,
  type ResyncPass,
} from './runtime/controller-set.js';
import { LeaderElector } from './runtime/leader-election.js';
import type { ControllerSetup, DatabaseMoves } from './runtime/setup.js';
import { setupFormController } from './form/setup.js';
import { setupSiteController } from './site/setup.js';
import { setupSqliteDatabaseController } from './sqlitedb/setup.js';

/**
 * Every controller the manager runs. Adding a kind is a setup function (controllers/<kind>/setup.ts:
 * informers, predicates, resync) and its parts of the reconcile pass (<kind>/reconciler.ts, run by
 * runtime/reconcile.ts), listed here.
 */
export const controllerSetups: readonly ControllerSetup[] = [
  setupSiteController,
  setupFormController,
  setupSqliteDatabaseController,
];

export interface ControllerManagerOptions {
  config: Config & { kubernetes: KubernetesConfig };
  kubeConfig: KubeConfig;
  platform: Platform;
  forms: FormsService;
  sqlite: SqliteDatabases;
  logger: Logger;
  /** Default true; tests of a single instance may turn it off. */
  leaderElection?: boolean;
  /** Reconcile workers per controller (default 2). */
  workers?: number;
  /** Default CACHE_SYNC_DEADLINE_MS. */
  cacheSyncDeadlineMs?: number;
  /** Per-call deadline of every Kubernetes API call but watches; default DEFAULT_KUBE_REQUEST_TIMEOUT_MS. */
  requestTimeoutMs?: number;
  /** Default controllerSetups. */
  setups?: readonly ControllerSetup[];
  /** Databases placed on another shard, as PostgreSQL tells them (see ControllerContext). */
  databaseMoves?: DatabaseMoves;
}

/** A leader whose caches are still empty after this long reports unhealthy (see isHealthy). */
export const CACHE_SYNC_DEADLINE_MS = 120_000;

export interface ControllerManager {
  isLeader(): boolean;
  /**
   * False when this replica leads but could not fill its caches in time (e.g. RBAC denies the
   * list): liveness fails, the pod restarts and releases the Lease to a replica that may do better.
   */
  isHealthy(): boolean;
  /** Ready: a standby is ready; a leader once its caches are filled. */
  isReady(): boolean;
  /**
   * Resolves when the first resync pass that starts after this call has finished (while leading),
   * with the controllers whose resync failed; rejects when the manager stops first.
   */
  nextResync(): Promise<ResyncPass>;
  stop(): Promise<void>;
}

/**
 * The `controller` role: campaigns for the Lease and, while leading, runs every controller of
 * `setups` on shared informers with a periodic resync. Losing the Lease stops all of it until
 * leadership comes back.
 */
export function startControllerManager(options: ControllerManagerOptions): ControllerManager {
  const { config, kubeConfig, logger } = options;
  const kube = config.kubernetes;
  const resyncs = new ResyncTracker();
  let running: ControllerSet | undefined;
  // Start and stop run one after the other: leadership regained while the previous controllers
  // still drain must not run two sets of workers at once.
  let transition: Promise<void> = Promise.resolve();

  const startLeading = (): void => {
    transition = transition.then(() => {
      logger.info({ identity: kube.podName }, 'leading: starting controllers');
      running = startControllerSet({
        config,
        kubeConfig,
        platform: options.platform,
        forms: options.forms,
        sqlite: options.sqlite,
        logger,
        setups: options.setups ?? controllerSetups,
        workers: options.workers,
        requestTimeoutMs: options.requestTimeoutMs,
        resyncs,
        databaseMoves: options.databaseMoves,
      });
    });
  };
  const stopLeading = (): Promise<void> => {
    transition = transition.then(async () => {
      const current = running;
      running = undefined;
      await current?.stop();
    });
    return transition;
  };

  const elector =
    options.leaderElection === false
      ? undefined
      : new LeaderElector({
          kubeConfig,
          namespace: kube.namespace,
          leaseName: kube.leaseName,
          identity: kube.podName,
          requestTimeoutMs: options.requestTimeoutMs,
          logger,
          onStartedLeading: startLeading,
          onStoppedLeading: () => {
            logger.warn({ identity: kube.podName }, 'not leading: stopping controllers');
            void stopLeading();
          },
        });
  if (elector) elector.start();
  else startLeading();

  return {
    isLeader: () => running !== undefined,
    isReady: () => (running ? running.synced() : true),
    isHealthy: () =>
      !running ||
      running.synced() ||
      Date.now() - running.startedAt < (options.cacheSyncDeadlineMs ?? CACHE_SYNC_DEADLINE_MS),
    nextResync: () => resyncs.next(),
    async stop() {
      // Controllers first (finishing in-flight reconciles), then release the Lease.
      await stopLeading();
      await elector?.stop();
      resyncs.close();
    },
  };
}
