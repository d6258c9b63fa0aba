import { Worker } from 'node:worker_threads';
import { SqliteEngineError } from './errors.js';
import {
  decodeResponse,
  encodeRequests,
  type Operation,
  type Request,
  type Response,
  type WorkerInit,
} from './protocol.js';
import type { EngineLimits } from './types.js';

/** A call sent to a worker and not answered yet. */
export interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  dbId: number;
  op: Operation;
}

/** The calls that a queue bound may refuse: tenant work (open, close and the rest always pass). */
const BOUNDED = new Set<Operation>(['query', 'queryJson', 'exec', 'batch', 'schema', 'vacuum']);

/** One worker thread and what is pinned to it. */
export class Slot {
  readonly worker: Worker;
  readonly pending = new Map<number, Pending>();
  readonly databases = new Set<number>();
  /** Calls sent and not answered yet, per database (for the queue bound). */
  private readonly waiting = new Map<number, number>();
  private outbox: Request[] = [];
  dead = false;

  // No parameter properties in this folder: its files also run under Node's type stripping.
  constructor(
    init: WorkerInit,
    onAnswer: (slot: Slot, response: Response) => void,
    onDeath: (slot: Slot, err: Error) => void,
  ) {
    this.worker = startWorker(init);
    const opOf = (id: number) => this.pending.get(id)?.op;
    this.worker.on('message', (message: unknown) => {
      const response = decodeResponse(message, opOf);
      if (response) onAnswer(this, response);
    });
    this.worker.on('error', (err) => onDeath(this, err));
    this.worker.on('exit', (code) => onDeath(this, new Error(`SQLite worker exited with code ${code}`)));
    // An answer that cannot be read names no call: fail them all rather than leave one waiting.
    this.worker.on('messageerror', (err) => {
      onDeath(this, err);
      void this.worker.terminate();
    });
  }

  /** Why a call of `dbId` cannot be queued now (a queue bound), or undefined. */
  refusal(dbId: number, op: Operation, limits: EngineLimits): SqliteEngineError | undefined {
    if (!BOUNDED.has(op)) return undefined;
    // Retry-After: about when one deadline's worth of the queue has gone by.
    const retryAfterSeconds = Math.max(1, Math.ceil(limits.statementTimeoutMs / 1000));
    if ((this.waiting.get(dbId) ?? 0) >= limits.maxQueuedPerDatabase) {
      return new SqliteEngineError({
        kind: 'busy',
        message: `This database already has ${limits.maxQueuedPerDatabase} calls waiting; try again shortly.`,
        retryAfterSeconds,
      });
    }
    // A database with nothing waiting is always admitted, so one account's queues (several
    // databases, each at its own bound) cannot fill the worker and shut every other tenant out:
    // the worker's queue stays within its bound plus one call per database pinned to it.
    if (this.pending.size >= limits.maxQueuedPerWorker && (this.waiting.get(dbId) ?? 0) > 0) {
      return new SqliteEngineError({
        kind: 'overloaded',
        message: 'The SQLite engine has too many calls waiting; try again shortly.',
        retryAfterSeconds,
      });
    }
    return undefined;
  }

  /**
   * Queues a request; everything queued until the event loop's check phase goes to the worker as
   * one message: all the calls parsed from the sockets that were ready in one poll, not one
   * message per call (a postMessage round trip costs more than most statements).
   */
  send(request: Request, pending: Pending): void {
    this.pending.set(request.id, pending);
    this.waiting.set(pending.dbId, (this.waiting.get(pending.dbId) ?? 0) + 1);
    this.outbox.push(request);
    if (this.outbox.length === 1) setImmediate(() => this.flush());
  }

  /** The pending call `id`, taken out of the books (undefined when already settled). */
  take(id: number): Pending | undefined {
    const pending = this.pending.get(id);
    if (!pending) return undefined;
    this.pending.delete(id);
    const left = (this.waiting.get(pending.dbId) ?? 1) - 1;
    if (left > 0) this.waiting.set(pending.dbId, left);
    else this.waiting.delete(pending.dbId);
    return pending;
  }

  /** Every pending call, taken out of the books (the worker died). */
  takeAll(): Pending[] {
    const all = [...this.pending.values()];
    this.pending.clear();
    this.waiting.clear();
    return all;
  }

  /**
   * Posts the outbox. Nothing thrown here may escape: this runs in a setImmediate, where an
   * exception ends the process. A message that cannot be cloned (or nests so deep the clone
   * overflows the stack) is retried call by call, and only the calls that cannot go are refused.
   */
  private flush(): void {
    const batch = this.outbox;
    this.outbox = [];
    if (this.dead) return; // died() has refused them
    try {
      this.worker.postMessage(encodeRequests(batch));
    } catch {
      for (const request of batch) {
        try {
          this.worker.postMessage(encodeRequests([request]));
        } catch (err) {
          this.take(request.id)?.reject(
            new SqliteEngineError({
              kind: 'statement',
              message: `The call cannot be sent to the SQLite engine (${err instanceof Error ? err.message : String(err)}): parameters are flat lists of values`,
            }),
          );
        }
      }
    }
  }
}

/**
 * Starts a worker on worker.js beside this file. Under the TypeScript sources (tests), Node strips
 * the types itself; a resolve hook maps the sources' `./x.js` imports to `./x.ts`.
 */
function startWorker(init: WorkerInit): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./worker.js', here), { workerData: init });
  const entry = new URL('./worker.ts', here).href;
  const bootstrap = `
    const { registerHooks } = require('node:module');
    registerHooks({
      resolve(specifier, context, next) {
        if (/^\\.\\.?\\//.test(specifier) && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
          return next(specifier.slice(0, -3) + '.ts', context);
        }
        return next(specifier, context);
      },
    });
    import(${JSON.stringify(entry)});
  `;
  return new Worker(bootstrap, { eval: true, workerData: init });
}
