import type { Logger } from 'pino';
import type { Config, KubernetesConfig } from '../../src/config/index.js';
import type { FormsService } from '../../src/forms/index.js';
import type { KubeClients } from '../../src/kube/index.js';
import type { Platform } from '../../src/platform/index.js';
import type { SqliteDatabases } from '../../src/sqlite/index.js';
import type { Controller } from './controller.js';
import type { EventRecorder } from './events.js';
import type { KubeObject } from './informer.js';
import type { SharedInformers } from './shared-informers.js';

/**
 * The name the controllers act under: field manager of their writes, `managed-by` label of what
 * they create, and the component of their Events.
 */
export const CONTROLLER_NAME = 'hostplane-controller';

/** What the manager hands every controller's setup function, shared by all controllers. */
export interface ControllerContext {
  config: Config & { kubernetes: KubernetesConfig };
  platform: Platform;
  /** Forms without a caller's scope (the Form controller); its delete purges the form's outbox mail. */
  forms: FormsService;
  /** SQLite databases as whole objects: created with a token, removed with their replica. */
  sqlite: SqliteDatabases;
  /** Typed clients of the three kinds and the built-in APIs, with the per-call deadline. */
  clients: KubeClients;
  /** Ask for informers here (not `new Informer`), so that controllers share one per collection. */
  informers: SharedInformers;
  events: EventRecorder;
  logger: Logger;
  /** Reconcile workers per controller. */
  workers: number | undefined;
  /**
   * Subscribes to databases placed on another shard (a failover, a drain; PostgreSQL NOTIFY), so
   * their status and Events follow at once rather than at the next resync; returns the unsubscribe.
   */
  databaseMoves?: DatabaseMoves;
}

/** See ControllerContext.databaseMoves. */
export type DatabaseMoves = (onMoved: (databaseId: number) => void) => () => void;

/** A controller as set up: what the manager starts, stops and resyncs. */
export interface ControllerRegistration {
  controller: Controller;
  /** The kind it reconciles: on every resync each cached object is queued again. */
  primary: { list(): readonly KubeObject[] };
  /**
   * More periodic work after the objects are queued (e.g. resources for database rows that have
   * none). `stopped()` turns true when leadership is lost: long loops should check it.
   */
  resync?: (stopped: () => boolean) => Promise<void>;
  /** Runs when the controllers stop (leadership lost): what the setup subscribed to, let go. */
  stop?: () => void;
}

/**
 * Creates one controller: asks `context.informers` for the informers it watches, adds handlers
 * that queue keys (predicates.ts: which updates bring a pass), and returns the controller.
 * Informers and workers are started by the manager.
 */
export type ControllerSetup = (context: ControllerContext) => ControllerRegistration;
