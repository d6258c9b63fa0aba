import { Worker } from 'node:worker_threads';
import type { Logger } from '../observability/index.js';
import { smallBlobCheckpoints } from './metrics.js';

/**
 * Bytes committed to the small objects' database after which its WAL is checkpointed (copied into
 * the database file) by the worker: about SQLite's own auto-checkpoint, 1000 pages of 4 KiB, which
 * the store's connection turns off (it would run inside a commit, on the main thread, with fsyncs).
 */
export const CHECKPOINT_BYTES = 4 * 1024 * 1024;

/**
 * Failures of the worker in a row (checkpoints it failed, or its start) after which the store
 * checkpoints on its own connection instead, between two writes on the main thread (the
 * fallback): a WAL that is never checkpointed grows without limit, and reads slow with it.
 */
export const CHECKPOINT_FAILURES_BEFORE_FALLBACK = 3;

/**
 * How long the fallback lasts before the worker is tried again (at the first threshold past it):
 * a worker that failed for a passing reason (memory, a file descriptor limit, a folder removed
 * under the store) takes the checkpoints off the main thread again. Each try that fails doubles
 * it, up to CHECKPOINT_WORKER_RETRY_MAX_MS; one that works ends the fallback.
 */
export const CHECKPOINT_WORKER_RETRY_MS = 60_000;

/** The longest cool-down between two tries of the worker during the fallback. */
export const CHECKPOINT_WORKER_RETRY_MAX_MS = 30 * 60_000;

/** The worker's answer to one checkpoint. */
export type CheckpointAnswer =
  { ok: true; log: number; checkpointed: number } | { ok: false; message: string };

/**
 * Checkpoints the small objects' WAL off the main thread: a worker with a connection of its own
 * runs `PRAGMA wal_checkpoint(PASSIVE)` each time the bytes committed since the last one pass the
 * threshold, one at a time. PASSIVE, not TRUNCATE: it takes no lock that a writer or reader waits
 * on (it copies what no reader still needs and stops), while TRUNCATE waits for the writers and
 * readers and holds off new writers meanwhile, which would turn into busy retries of the store's
 * writes. After a complete passive checkpoint the next write starts the WAL from its beginning,
 * so the file stays about the threshold's size. The worker starts on the first checkpoint, does
 * not keep the process alive, and its failures are logged and counted, never thrown: the next
 * threshold tries again (a worker that died is started again), until
 * CHECKPOINT_FAILURES_BEFORE_FALLBACK in a row turn to the fallback, which tries the worker again
 * after a cool-down (CHECKPOINT_WORKER_RETRY_MS, doubling while it keeps failing). Which way each
 * checkpoint ran is counted (hostplane_small_blob_checkpoints_total: ok by the worker, fallback on
 * the main thread), and each switch is logged.
 */
export class SmallBlobCheckpointer {
  private worker: Worker | undefined;
  private sinceLast = 0;
  private inFlight = false;
  private failures = 0;
  private fallback = false;
  /** During the fallback: the cool-down before the next try of the worker, and when it ends (performance.now()). */
  private coolDownMs: number;
  private retryAt = 0;
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly binding: () => string,
    private readonly thresholdBytes: number = CHECKPOINT_BYTES,
    private readonly logger?: Logger,
    private readonly entry: URL = workerEntry(),
    /** Checkpoints on the store's own connection (the fallback). */
    private readonly checkpointHere: () => void = () => undefined,
    /** The first cool-down of the fallback (tests shorten it). */
    private readonly retryMs: number = CHECKPOINT_WORKER_RETRY_MS,
  ) {
    this.coolDownMs = retryMs;
  }

  /** Counts bytes committed; starts a checkpoint when they pass the threshold and none is running. */
  wrote(bytes: number): void {
    if (this.closed) return;
    this.sinceLast += bytes;
    if (this.sinceLast < this.thresholdBytes || this.inFlight) return;
    this.sinceLast = 0;
    // During the cool-down, on the main thread; past it, this checkpoint tries the worker again.
    if (this.fallback && performance.now() < this.retryAt) return this.checkpointInPlace();
    try {
      const worker = (this.worker ??= this.start());
      worker.postMessage(this.file);
      this.inFlight = true;
    } catch (err) {
      this.failed(err instanceof Error ? err.message : String(err));
    }
  }

  private start(): Worker {
    const worker = new Worker(this.entry, { workerData: { binding: this.binding() } });
    worker.unref();
    worker.on('message', (answer: CheckpointAnswer) => {
      if (this.worker !== worker) return; // closed, or replaced: the flag is another worker's now
      this.inFlight = false;
      if (!answer.ok) return this.failed(answer.message);
      this.failures = 0;
      smallBlobCheckpoints.inc({ outcome: 'ok' });
      if (this.fallback) this.recovered();
    });
    // An exception in the worker ends it: counted, logged, and the next threshold starts another.
    worker.on('error', (err) => this.ended(worker, err.message));
    worker.on('exit', (code) => this.ended(worker, `exited with code ${code}`));
    return worker;
  }

  private ended(worker: Worker, message: string): void {
    if (this.worker !== worker) return; // closed, or replaced already
    this.worker = undefined;
    if (this.inFlight) this.failed(message);
    this.inFlight = false;
  }

  private failed(message: string): void {
    smallBlobCheckpoints.inc({ outcome: 'failed' });
    this.warn('small objects database: WAL checkpoint failed', message);
    if (this.fallback) {
      // A try after the cool-down failed: a longer one, on the main thread meanwhile.
      this.coolDownMs = Math.min(this.coolDownMs * 2, CHECKPOINT_WORKER_RETRY_MAX_MS);
      this.retryAt = performance.now() + this.coolDownMs;
      this.warn(
        `small objects database: the checkpoint worker failed again; tried again in ${seconds(this.coolDownMs)}`,
        message,
      );
      return;
    }
    if (++this.failures < CHECKPOINT_FAILURES_BEFORE_FALLBACK) return;
    this.fallback = true;
    this.coolDownMs = this.retryMs;
    this.retryAt = performance.now() + this.coolDownMs;
    this.warn(
      `small objects database: the checkpoint worker failed ${this.failures} times in a row; ` +
        `the WAL is checkpointed on the main connection, and the worker tried again in ${seconds(this.coolDownMs)}`,
      message,
    );
  }

  /** A try of the worker after the cool-down worked: the fallback ends. */
  private recovered(): void {
    this.fallback = false;
    this.coolDownMs = this.retryMs;
    const text = 'small objects database: the checkpoint worker checkpoints the WAL again';
    if (this.logger) this.logger.info({ file: this.file }, text);
    else process.emitWarning(`${text} (${this.file})`);
  }

  /** The fallback: a passive checkpoint on the store's connection, after a commit. */
  private checkpointInPlace(): void {
    try {
      this.checkpointHere();
      smallBlobCheckpoints.inc({ outcome: 'fallback' });
    } catch (err) {
      smallBlobCheckpoints.inc({ outcome: 'failed' });
      this.warn(
        'small objects database: WAL checkpoint failed',
        err instanceof Error ? err.message : String(err),
      );
    }
  }

  private warn(text: string, reason: string): void {
    if (this.logger) this.logger.warn({ file: this.file, reason }, text);
    else process.emitWarning(`${text} (${this.file}): ${reason}`);
  }

  /** Ends the worker (a checkpoint under way is abandoned; the next connection's close or checkpoint finishes it). */
  close(): void {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.inFlight = false;
    if (worker) void worker.terminate();
  }
}

const seconds = (ms: number): string => `${ms / 1000} s`;

/**
 * The worker's file beside this one: the built .js under dist/, the .ts source under
 * the tests (Node strips the types; the worker imports no relative module, so it needs no hook).
 */
function workerEntry(): URL {
  const here = import.meta.url;
  return new URL(`./small-blob-checkpoint-worker${here.endsWith('.ts') ? '.ts' : '.js'}`, here);
}
