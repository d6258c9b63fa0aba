import { Worker } from 'node:worker_threads';
import type { Logger } from '../observability/index.js';
import { smallBlobCheckpoints } from './metrics.js';

/**
 * Bytes committed to the small objects' database after which its WAL is checkpointed (copied into
 * the database file) by the worker: about SQLite's own auto-checkpoint, 1000 pages of 4 KiB, which
 * the store's connection turns off (it would run inside a commit, on the main thread, with fsyncs).
 */
export const CHECKPOINT_BYTES = 4 * 1024 * 1024;

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
 * threshold tries again (a worker that died is started again).
 */
export class SmallBlobCheckpointer {
  private worker: Worker | undefined;
  private sinceLast = 0;
  private inFlight = false;

  constructor(
    private readonly file: string,
    private readonly binding: () => string,
    private readonly thresholdBytes: number = CHECKPOINT_BYTES,
    private readonly logger?: Logger,
  ) {}

  /** Counts bytes committed; starts a checkpoint when they pass the threshold and none is running. */
  wrote(bytes: number): void {
    this.sinceLast += bytes;
    if (this.sinceLast < this.thresholdBytes || this.inFlight) return;
    this.sinceLast = 0;
    try {
      const worker = (this.worker ??= this.start());
      worker.postMessage(this.file);
      this.inFlight = true;
    } catch (err) {
      this.failed(err instanceof Error ? err.message : String(err));
    }
  }

  private start(): Worker {
    const worker = startWorker(this.binding());
    worker.unref();
    worker.on('message', (answer: CheckpointAnswer) => {
      this.inFlight = false;
      if (answer.ok) smallBlobCheckpoints.inc({ outcome: 'ok' });
      else this.failed(answer.message);
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
    const text = 'small objects database: WAL checkpoint failed';
    if (this.logger) this.logger.warn({ file: this.file, reason: message }, text);
    else process.emitWarning(`${text} (${this.file}): ${message}`);
  }

  /** Ends the worker (a checkpoint under way is abandoned; the next connection's close or checkpoint finishes it). */
  close(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.inFlight = false;
    if (worker) void worker.terminate();
  }
}

/**
 * Starts the worker from its file beside this one: the built .js under dist/, the .ts source under
 * the tests (Node strips the types; the worker imports no relative module, so it needs no hook).
 */
function startWorker(binding: string): Worker {
  const here = import.meta.url;
  const entry = new URL(`./small-blob-checkpoint-worker${here.endsWith('.ts') ? '.ts' : '.js'}`, here);
  return new Worker(entry, { workerData: { binding } });
}
