import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config, KubernetesConfig } from '../../src/config/index.js';
import type { FormsService } from '../../src/forms/index.js';
import { kubeClients } from '../../src/kube/index.js';
import type { Platform } from '../../src/platform/index.js';
import type { SqliteDatabases } from '../../src/sqlite/index.js';
import { objectKey } from './controller.js';
import { EventRecorder } from './events.js';
import { resyncTotal } from './metrics.js';
import {
  CONTROLLER_NAME,
  type ControllerRegistration,
  type ControllerSetup,
  type DatabaseMoves,
} from './setup.js';
import { SharedInformers } from './shared-informers.js';

export interface ControllerSetOptions {
  config: Config & { kubernetes: KubernetesConfig };
  kubeConfig: KubeConfig;
  platform: Platform;
  forms: FormsService;
  sqlite: SqliteDatabases;
  logger: Logger;
  setups: readonly ControllerSetup[];
  workers: number | undefined;
  /** Per-call deadline of the Kubernetes clients. */
  requestTimeoutMs: number | undefined;
  resyncs: ResyncTracker;
  databaseMoves?: DatabaseMoves;
}

/** The controllers of one leadership term. */
export interface ControllerSet {
  startedAt: number;
  synced(): boolean;
  stop(): Promise<void>;
}

/** How one periodic resync pass went: the controllers whose resync work failed. */
export interface ResyncPass {
  failed: string[];
}

/**
 * Counts resync passes across leadership terms, so that a caller can wait for a pass that
 * started after some change of its own (e.g. a test proving the resync leaves something alone).
 */
export class ResyncTracker {
  private begun = 0;
  private readonly waiters: {
    after: number;
    resolve: (pass: ResyncPass) => void;
    reject: (err: Error) => void;
  }[] = [];

  /** A pass starts; returns its number. */
  begin(): number {
    return ++this.begun;
  }

  end(pass: number, result: ResyncPass): void {
    for (const waiter of [...this.waiters]) {
      if (pass <= waiter.after) continue;
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve(result);
    }
  }

  /** Resolves when the first pass that starts after this call has finished. */
  next(): Promise<ResyncPass> {
    return new Promise((resolve, reject) => this.waiters.push({ after: this.begun, resolve, reject }));
  }

  /** No more passes will come (the manager stopped). */
  close(): void {
    for (const waiter of this.waiters.splice(0)) waiter.reject(new Error('the controller manager stopped'));
  }
}

/**
 * Sets up every controller on shared informers, starts the informers at once and the workers once
 * the caches are filled, then resyncs every `resyncMs`. stop() works at any point.
 */
export function startControllerSet(options: ControllerSetOptions): ControllerSet {
  const { config, kubeConfig, logger } = options;
  const kube = config.kubernetes;
  const clients = kubeClients(kubeConfig, kube.namespace, CONTROLLER_NAME, {
    requestTimeoutMs: options.requestTimeoutMs,
  });
  const informers = new SharedInformers({ kubeConfig, namespace: kube.namespace, logger });
  const context = {
    config,
    platform: options.platform,
    forms: options.forms,
    sqlite: options.sqlite,
    clients,
    informers,
    events: new EventRecorder(clients.core, CONTROLLER_NAME, kube.podName, logger),
    logger,
    workers: options.workers,
    databaseMoves: options.databaseMoves,
  };
  const registrations = options.setups.map((setup) => setup(context));

  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let resyncing: Promise<void> | undefined;
  const resync = (): void => {
    // A pass still running (a slow database) is not doubled: the next tick tries again.
    if (resyncing || stopped) return;
    resyncing = resyncAll(registrations, options.resyncs, () => stopped, logger).finally(() => {
      resyncing = undefined;
    });
  };
  void informers.start().then(() => {
    if (stopped) return;
    for (const { controller } of registrations) controller.start();
    resync();
    timer = setInterval(resync, kube.resyncMs);
    timer.unref();
  });

  return {
    startedAt: Date.now(),
    synced: () => informers.hasSynced(),
    async stop() {
      stopped = true;
      clearInterval(timer);
      for (const registration of registrations) registration.stop?.();
      await informers.stop();
      await Promise.all(registrations.map(({ controller }) => controller.stop()));
      await resyncing;
    },
  };
}

/** Level-triggered safety net: every cached object queued again, then each controller's own resync. */
async function resyncAll(
  registrations: readonly ControllerRegistration[],
  tracker: ResyncTracker,
  stopped: () => boolean,
  logger: Logger,
): Promise<void> {
  const pass = tracker.begin();
  const failed: string[] = [];
  for (const { controller, primary, resync } of registrations) {
    for (const object of primary.list()) controller.enqueue(objectKey(object));
    try {
      await resync?.(stopped);
      resyncTotal.inc({ controller: controller.name, result: 'success' });
    } catch (err) {
      failed.push(controller.name);
      resyncTotal.inc({ controller: controller.name, result: 'error' });
      logger.warn({ err, controller: controller.name }, 'resync failed');
    }
  }
  tracker.end(pass, { failed });
}
