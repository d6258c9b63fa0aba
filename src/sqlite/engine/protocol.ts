import type { SqliteEngineErrorData } from './errors.js';
import type { NativeParts } from '../../config/index.js';
import type { EngineLimits, VersionResult } from './types.js';

/** Messages between the pool (main thread) and its workers. */
export type Operation =
  | 'open'
  | 'query'
  | 'queryJson'
  | 'exec'
  | 'batch'
  | 'schema'
  | 'vacuum'
  | 'version'
  | 'setMaxBytes'
  | 'setVersion'
  | 'close';

export interface Request {
  id: number;
  op: Operation;
  dbId: number;
  args: unknown[];
  /** When the pool queued it (ms, performance.timeOrigin + performance.now(): comparable across threads). */
  sentAt: number;
}

/** How long a call waited for its worker, and how long it ran there. */
export interface Timing {
  queueMs: number;
  runMs: number;
  /** exec: how many calls shared its COMMIT (group commit; absent: 1). */
  group?: number;
}

/** Every answer carries the database's version and size, which the pool keeps in memory. */
export type Response =
  | { id: number; ok: true; value: unknown; state: VersionResult | undefined; timing: Timing }
  | { id: number; ok: false; error: SqliteEngineErrorData; state: VersionResult | undefined; timing: Timing };

export interface WorkerInit {
  limits: EngineLimits;
  native: NativeParts;
}
