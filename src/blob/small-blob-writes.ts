import { smallBlobBusyRetries } from './metrics.js';

/** How long a write (from its call) is retried while another connection holds the write lock. */
export const BUSY_GIVE_UP_MS = 5_000;

/** The longest pause between two attempts of a busy write (the pauses double from 1 ms). */
export const RETRY_MAX_PAUSE_MS = 50;

/**
 * How long the queue runs writes in one turn of the event loop before it lets other callbacks
 * (requests, timers) run and goes on from setImmediate: a long queue (a sweep's thousands of
 * deletes, a bulk upload's batches) is many short turns, not one long one.
 */
export const WRITE_TURN_MS = 5;

/** The most rows one batch of puts (or of deletes) commits in one transaction. */
export const BATCH_MAX_ROWS = 1000;

/** The most bytes of bodies one batch of puts commits in one transaction. */
export const BATCH_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The age past which a batch takes no more puts. A put that joins a batch shares its deadline
 * (the first put's call plus the give-up bound): at worst it is given up this much earlier than
 * one of its own would be.
 */
export const BATCH_MAX_AGE_MS = 1_000;

/** A write waiting for its turn: `attempt` runs it (synchronously) and settles its caller. */
export interface Write {
  operation: 'put' | 'copy' | 'delete';
  /** When it was asked for: it gives up the queue's bound later. */
  since: number;
  attempt(): void;
  fail(err: unknown): void;
}

/** What a write is rejected with once the store is closed. */
export class SmallBlobClosedError extends Error {
  readonly code = 'SMALL_BLOB_CLOSED';
  constructor() {
    super("small objects database: closed (the blob store's close() was called)");
  }
}

const isBusy = (err: unknown): boolean => ((err as { code?: string }).code ?? '').startsWith('SQLITE_BUSY');

/**
 * The small objects' writes, run one at a time in the order they were asked for. One that meets
 * another connection's write lock (SQLITE_BUSY) is retried from a timer, with pauses doubling up
 * to RETRY_MAX_PAUSE_MS, until `giveUpMs` after its call; the writes behind it wait. The queue
 * runs for at most WRITE_TURN_MS per turn of the event loop. close() rejects what is queued or
 * retrying and takes no more.
 */
export class WriteQueue {
  private readonly writes: Write[] = [];
  /** A turn is scheduled, running, or a write is waiting for its retry. */
  private writing = false;
  private retrying: { write: Write; timer: NodeJS.Timeout } | undefined;
  private turn: NodeJS.Immediate | undefined;
  private closed = false;

  constructor(private readonly giveUpMs: number = BUSY_GIVE_UP_MS) {}

  get isClosed(): boolean {
    return this.closed;
  }

  push(write: Write): void {
    if (this.closed) return write.fail(new SmallBlobClosedError());
    this.writes.push(write);
    if (this.writing) return;
    this.writing = true;
    this.schedule();
  }

  private schedule(): void {
    this.turn = setImmediate(() => {
      this.turn = undefined;
      this.next();
    });
  }

  /** Runs the queued writes in order (a loop: the queue may be long) until one is busy or the turn is over. */
  private next(): void {
    const until = performance.now() + WRITE_TURN_MS;
    for (let write = this.writes.shift(); write; write = this.writes.shift()) {
      if (!this.attempt(write, 0)) return; // its retry goes on from a timer
      if (this.writes.length > 0 && performance.now() >= until) return this.schedule();
    }
    this.writing = false;
  }

  /** Runs a write once; false when it met the lock and is retried later (with backoff). */
  private attempt(write: Write, retries: number): boolean {
    try {
      write.attempt();
    } catch (err) {
      const left = write.since + this.giveUpMs - Date.now();
      if (!isBusy(err) || left <= 0) {
        write.fail(err);
        return true;
      }
      smallBlobBusyRetries.inc({ operation: write.operation });
      const pause = Math.min(2 ** retries, RETRY_MAX_PAUSE_MS, left);
      const timer = setTimeout(() => {
        this.retrying = undefined;
        if (this.attempt(write, retries + 1)) this.next();
      }, pause);
      this.retrying = { write, timer };
      return false;
    }
    return true;
  }

  /** Rejects the writes queued or retrying; later ones are rejected at once. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const err = new SmallBlobClosedError();
    if (this.turn) clearImmediate(this.turn);
    const retrying = this.retrying;
    if (retrying) clearTimeout(retrying.timer);
    this.retrying = undefined;
    this.turn = undefined;
    this.writing = false;
    retrying?.write.fail(err);
    for (const write of this.writes.splice(0)) write.fail(err);
  }
}
