import { availableParallelism } from 'node:os';
import path from 'node:path';
import { SqliteEngineError } from './errors.js';
import { locateNativeParts, type NativeParts } from '../../config/index.js';
import type { Operation, Response, Timing, WorkerInit } from './protocol.js';
import { Slot } from './slot.js';
import {
  type BatchResult,
  DEFAULT_LIMITS,
  type EngineLimits,
  type ExecResult,
  type OpenOptions,
  type QueryJsonResult,
  type QueryResult,
  type SchemaResult,
  type StatementInput,
  type VacuumResult,
  type VersionResult,
} from './types.js';

export interface SqlitePoolOptions {
  /** Worker threads; default: the CPU count. */
  size?: number;
  limits?: Partial<EngineLimits>;
  /** Where the native build is; default: locateNativeParts(). */
  native?: NativeParts;
  /** Called after every call: for metrics (queue wait = time spent behind other calls of the worker). */
  onCall?: (event: CallEvent) => void;
}

export interface CallEvent extends Timing {
  op: Operation;
  /** 'ok', or the error's kind. */
  outcome: 'ok' | SqliteEngineError['kind'];
}

/**
 * The SQLite engine of one shard: a pool of worker threads, each database pinned to one worker
 * (the least loaded when it is opened), so its statements run one at a time and never on the
 * event loop. Opening a file that is already open returns the same database (counted: each open
 * needs its close).
 */
export class SqlitePool {
  readonly limits: EngineLimits;
  private readonly init: WorkerInit;
  private readonly slots: (Slot | undefined)[];
  private readonly byPath = new Map<string, { db: Promise<SqliteDatabase>; refs: number }>();
  private nextId = 1;
  private closed = false;
  private readonly onCall: ((event: CallEvent) => void) | undefined;

  constructor(options: SqlitePoolOptions = {}) {
    this.onCall = options.onCall;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.init = { limits: this.limits, native: options.native ?? locateNativeParts() };
    this.slots = new Array<Slot | undefined>(Math.max(1, options.size ?? availableParallelism())).fill(
      undefined,
    );
  }

  get size(): number {
    return this.slots.length;
  }

  /** Opens (creating it if absent) the database at `filePath`, with its size cap. */
  async open(filePath: string, options: OpenOptions): Promise<SqliteDatabase> {
    if (this.closed) throw new SqliteEngineError({ kind: 'closed', message: 'The SQLite pool is closed' });
    const key = path.resolve(filePath);
    const existing = this.byPath.get(key);
    if (existing) {
      existing.refs++;
      const db = await existing.db;
      if (db.maxBytes !== options.maxBytes) await db.setMaxBytes(options.maxBytes);
      return db;
    }
    const dbId = this.nextId++;
    const slot = this.leastLoaded();
    const opening = this.call(slot, dbId, 'open', [key, options]).then(() => {
      slot.databases.add(dbId);
      return new SqliteDatabase(this, slot, dbId, key, options.maxBytes);
    });
    const entry = { db: opening, refs: 1 };
    this.byPath.set(key, entry);
    opening.catch(() => this.byPath.delete(key));
    return opening;
  }

  /** Closes every database and stops the workers. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const open = [...this.byPath.values()].map((e) =>
      e.db.then((db) => db.closeNow()).catch(() => undefined),
    );
    await Promise.all(open);
    this.byPath.clear();
    await Promise.all(
      this.slots.map(async (slot) => {
        if (!slot || slot.dead) return;
        slot.dead = true;
        await slot.worker.terminate();
      }),
    );
  }

  /** Workers started and databases pinned to each (for metrics and tests). */
  stats(): { workers: number; databasesPerWorker: number[] } {
    return {
      workers: this.slots.filter((s) => s && !s.dead).length,
      databasesPerWorker: this.slots.map((s) => (s && !s.dead ? s.databases.size : 0)),
    };
  }

  /** @internal one round trip to the worker that holds `dbId`. */
  call(slot: Slot, dbId: number, op: Operation, args: unknown[]): Promise<unknown> {
    if (slot.dead) {
      return Promise.reject(new SqliteEngineError({ kind: 'closed', message: 'The SQLite worker stopped' }));
    }
    const refused = slot.refusal(dbId, op, this.limits);
    if (refused) return Promise.reject(refused);
    return new Promise((resolve, reject) => {
      const sentAt = performance.timeOrigin + performance.now();
      slot.send({ id: this.nextId++, op, dbId, args, sentAt }, { resolve, reject, dbId, op });
    });
  }

  /** @internal the last close of a database. */
  release(db: SqliteDatabase): boolean {
    const entry = this.byPath.get(db.filePath);
    if (!entry) return true;
    entry.refs--;
    if (entry.refs > 0) return false;
    this.byPath.delete(db.filePath);
    return true;
  }

  private leastLoaded(): Slot {
    let best = -1;
    let bestLoad = Infinity;
    this.slots.forEach((slot, index) => {
      const load = slot && !slot.dead ? slot.databases.size : -1; // an unstarted slot is the emptiest
      if (load < bestLoad) {
        best = index;
        bestLoad = load;
      }
    });
    let slot = this.slots[best];
    if (!slot || slot.dead) {
      slot = new Slot(
        this.init,
        (s, response) => this.answered(s, response),
        (s, err) => this.died(s, err),
      );
      this.slots[best] = slot;
    }
    return slot;
  }

  private answered(slot: Slot, response: Response): void {
    const pending = slot.take(response.id);
    if (!pending) return;
    const db = this.handles.get(pending.dbId);
    if (response.state && db) db.remember(response.state);
    try {
      this.onCall?.({
        op: pending.op === 'queryJson' ? 'query' : pending.op, // one label for both forms
        outcome: response.ok ? 'ok' : response.error.kind,
        ...response.timing,
      });
    } catch {
      // Metrics must not lose the answer, nor throw out of the worker's message listener.
    }
    if (response.ok) pending.resolve(response.value);
    else pending.reject(new SqliteEngineError(response.error));
  }

  /** A worker that dies takes its databases with it: their handles answer `closed` from then on. */
  private died(slot: Slot, err: Error): void {
    if (slot.dead && slot.pending.size === 0) return;
    slot.dead = true;
    for (const pending of slot.takeAll()) {
      pending.reject(
        new SqliteEngineError({ kind: 'closed', message: `The SQLite worker stopped: ${err.message}` }),
      );
    }
    for (const [key, entry] of this.byPath) {
      void entry.db.then(
        (db) => db.slotIs(slot) && this.byPath.delete(key),
        () => undefined,
      );
    }
  }

  /** @internal handles by id, for the in-memory version. */
  readonly handles = new Map<number, SqliteDatabase>();
}

/** One open database. Every method is one round trip to its worker (version(): none when known). */
export class SqliteDatabase {
  private known: VersionResult | undefined;
  private closed = false;
  private readonly pool: SqlitePool;
  private readonly slot: Slot;
  private readonly dbId: number;
  readonly filePath: string;
  maxBytes: number | null;

  constructor(pool: SqlitePool, slot: Slot, dbId: number, filePath: string, maxBytes: number | null) {
    this.pool = pool;
    this.slot = slot;
    this.dbId = dbId;
    this.filePath = filePath;
    this.maxBytes = maxBytes;
    pool.handles.set(dbId, this);
  }

  /** One read-only statement that returns rows. */
  query(sql: string, params?: unknown[]): Promise<QueryResult> {
    return this.call('query', [sql, params]) as Promise<QueryResult>;
  }

  /** `query` with the rows as JSON text, serialized by the worker (for an answer sent as it is). */
  queryJson(sql: string, params?: unknown[]): Promise<QueryJsonResult> {
    return this.call('queryJson', [sql, params]) as Promise<QueryJsonResult>;
  }

  /** One write statement, in its own transaction (the version goes up by one). */
  exec(sql: string, params?: unknown[]): Promise<ExecResult> {
    return this.call('exec', [sql, params]) as Promise<ExecResult>;
  }

  /** Write statements in one IMMEDIATE transaction, all or nothing; a failure names its index. */
  batch(statements: StatementInput[]): Promise<BatchResult> {
    return this.call('batch', [statements]) as Promise<BatchResult>;
  }

  schema(): Promise<SchemaResult> {
    return this.call('schema', []) as Promise<SchemaResult>;
  }

  /** The version and size from memory (every answer of the worker refreshes them). */
  async version(): Promise<VersionResult> {
    if (this.known && !this.closed) return { ...this.known };
    return (await this.call('version', [])) as VersionResult;
  }

  vacuum(): Promise<VacuumResult> {
    return this.call('vacuum', []) as Promise<VacuumResult>;
  }

  async setMaxBytes(maxBytes: number | null): Promise<void> {
    await this.call('setMaxBytes', [maxBytes]);
    this.maxBytes = maxBytes;
  }

  /** Sets the change counter (after a point-in-time restore; see GuardedDatabase.setVersion). */
  async setVersion(version: number): Promise<void> {
    await this.call('setVersion', [version]);
  }

  /** Closes this handle; the connection closes with the last handle of the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.pool.release(this)) await this.closeNow();
  }

  /** @internal */
  async closeNow(): Promise<void> {
    if (this.closed) return;
    try {
      await this.call('close', []);
    } catch {
      // A dead worker closed it already.
    }
    this.closed = true;
    this.slot.databases.delete(this.dbId);
    this.pool.handles.delete(this.dbId);
  }

  /** @internal */
  remember(state: VersionResult): void {
    this.known = state;
  }

  /** False once closed or its worker died: a new handle must be opened. */
  get usable(): boolean {
    return !this.closed && !this.slot.dead;
  }

  /** @internal */
  slotIs(slot: Slot): boolean {
    return this.slot === slot;
  }

  private call(op: Operation, args: unknown[]): Promise<unknown> {
    if (this.closed) {
      return Promise.reject(new SqliteEngineError({ kind: 'closed', message: 'The database is closed' }));
    }
    return this.pool.call(this.slot, this.dbId, op, args);
  }
}
