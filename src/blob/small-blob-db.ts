import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { locateNativeParts } from '../config/index.js';
import type { Logger } from '../observability/index.js';
import type { BlobListing } from './blob-store.js';
import { SmallBlobCheckpointer } from './small-blob-checkpoint.js';
import {
  BATCH_MAX_AGE_MS,
  BATCH_MAX_BYTES,
  BATCH_MAX_ROWS,
  SmallBlobClosedError,
  WriteQueue,
  type Write,
} from './small-blob-writes.js';

/**
 * Objects of at most this many bytes that FsBlobStore is handed whole (put, copy and move of a
 * small object) live as rows of one SQLite database in the blob folder instead of one file each:
 * creating a file (temp file, rename) costs 17–50 ms on a calm disk and several times that when
 * the file system's journal is busy, a row a fraction of a millisecond (sqlite.org/fasterthanfs).
 * A deploy's pages, styles and scripts are mostly below it; images and videos mostly above.
 */
export const SMALL_BLOB_MAX_BYTES = 64 * 1024;

/** The database's file name in the blob folder (with its `-wal` and `-shm` beside it). */
export const SMALL_BLOB_DB_FILE = 'small-blobs.sqlite';

/**
 * How long a statement of the store's connection waits, on the main thread, for another
 * connection's lock (another process on the folder, e.g. `hostplane admin`, or a second store)
 * before SQLite answers SQLITE_BUSY. A couple of milliseconds, not 0: a read in WAL mode waits for
 * no writer, only for another connection's rebuilding of the WAL index after a crash (short);
 * a write that stays busy is retried from a timer (small-blob-writes.ts), so this is all any one
 * attempt of a write blocks the event loop.
 */
const BUSY_WAIT_MS = 2;

/**
 * How long a read (or an opening of the connection) that met SQLITE_BUSY within BUSY_WAIT_MS
 * waits on its one second try, blocking the main thread: rare (another connection's recovery of
 * the WAL after a crash, another process's checkpoint as its last connection closes, the
 * exclusive lock of a fresh file's switch to WAL), short when it happens, and a read has no
 * queue to wait in; failing would answer a GET with a 500.
 */
const READ_BUSY_WAIT_MS = 250;

/** About what a row's deletion (or a statement's other pages) adds to the WAL. */
const PAGE_BYTES = 4096;

/** Rows read by one statement of a listing (the sweeper deletes between pages). */
export const LIST_PAGE = 1000;

/** Above any character a key may hold after a prefix: `key < prefix + this` bounds a prefix's range. */
const PREFIX_END = '\u{10FFFF}';

/** SQLite's answers that mean the file went away under an open connection (its folder was removed). */
const GONE = new Set(['SQLITE_READONLY_DBMOVED', 'SQLITE_CANTOPEN', 'SQLITE_IOERR_DELETE', 'SQLITE_NOTADB']);

export interface SmallBlobOptions {
  /** How long a write is retried while another connection holds the lock (BUSY_GIVE_UP_MS). */
  busyGiveUpMs?: number;
  /** Bytes committed between two checkpoints of the WAL (CHECKPOINT_BYTES). */
  checkpointBytes?: number;
  /** Where a failed checkpoint is reported. */
  logger?: Logger;
  /** The checkpoint worker's module (tests point it at a missing file, or at one that fails on demand). */
  checkpointWorker?: URL;
  /** The first cool-down before the worker is tried again after the fallback (CHECKPOINT_WORKER_RETRY_MS; tests shorten it). */
  checkpointRetryMs?: number;
}

type Statements = ReturnType<typeof prepare>;

/** One caller's part of a write: its statement(s), the bytes it added to the WAL, its promise. */
interface Step {
  run(s: Statements): { result: unknown; bytes: number };
  resolve(result: unknown): void;
  reject(err: unknown): void;
  /** Its caller's signal aborted before its batch started: rejected already, and left out of the batch. */
  dropped?: boolean;
}

/** Steps committed in one transaction: one copy, or puts (deletes) asked for together. */
interface Batch {
  operation: Write['operation'];
  since: number;
  steps: Step[];
  bytes: number;
}

const isBusy = (err: unknown): boolean => ((err as { code?: string }).code ?? '').startsWith('SQLITE_BUSY');

/**
 * The small objects' database: WAL and synchronous=NORMAL, the promise of the files beside it (a
 * crashed process loses nothing, a power cut may lose the last writes). Reads are one prepared
 * statement on a primary key (or one page of a key range), synchronous on the caller's thread:
 * short, and in WAL mode they wait for no writer. Writes are queued and run one at a time in the
 * order they were asked for (small-blob-writes.ts); one that meets another connection's write lock
 * is retried from a timer (the event loop keeps turning) until BUSY_GIVE_UP_MS. The WAL is
 * checkpointed by a worker (small-blob-checkpoint.ts), not inside a commit. Opened on first use;
 * opened again when its folder was removed under it; never after close().
 */
export class SmallBlobDb {
  private db: Database.Database | undefined;
  private statements: Statements | undefined;
  private readonly queue: WriteQueue;
  /** The last queued write while it has not started, puts or deletes: later ones of its kind join it. */
  private batch: Batch | undefined;
  /** The busy timeout of the connection: BUSY_WAIT_MS, READ_BUSY_WAIT_MS during a read's second try. */
  private busyWaitMs = BUSY_WAIT_MS;
  private readonly checkpointer: SmallBlobCheckpointer;

  constructor(
    private readonly dir: string,
    options: SmallBlobOptions = {},
  ) {
    this.queue = new WriteQueue(options.busyGiveUpMs);
    this.checkpointer = new SmallBlobCheckpointer(
      path.join(dir, SMALL_BLOB_DB_FILE),
      () => locateNativeParts().binding,
      options.checkpointBytes,
      options.logger,
      options.checkpointWorker,
      // The fallback when the worker keeps failing: between two writes, on the main thread.
      () => this.db?.pragma('wal_checkpoint(PASSIVE)'),
      options.checkpointRetryMs,
    );
  }

  private open(): Statements {
    if (this.statements) return this.statements;
    if (this.queue.isClosed) throw new SmallBlobClosedError();
    mkdirSync(this.dir, { recursive: true });
    const db = new Database(path.join(this.dir, SMALL_BLOB_DB_FILE), {
      nativeBinding: locateNativeParts().binding,
      timeout: this.busyWaitMs,
    });
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('wal_autocheckpoint = 0'); // the checkpointer's worker does it
      db.exec(`create table if not exists small_blobs (
        key text primary key,
        size integer not null,
        modified_ms integer not null,
        body blob not null
      )`);
      this.statements = prepare(db);
    } catch (err) {
      db.close();
      throw err;
    }
    this.db = db;
    return this.statements;
  }

  /** Runs `fn` on the statements; once more on a fresh connection when the file went away. */
  private run<T>(fn: (s: Statements) => T): T {
    try {
      return fn(this.open());
    } catch (err) {
      if (!GONE.has((err as { code?: string }).code ?? '')) throw err;
      this.closeConnection();
      return fn(this.open());
    }
  }

  /** A read: once more, waiting up to READ_BUSY_WAIT_MS, when it met another connection's lock. */
  private read<T>(fn: (s: Statements) => T): T {
    try {
      return this.run(fn);
    } catch (err) {
      if (!isBusy(err)) throw err;
      this.setBusyWait(READ_BUSY_WAIT_MS);
      try {
        return this.run(fn);
      } finally {
        this.setBusyWait(BUSY_WAIT_MS);
      }
    }
  }

  private setBusyWait(ms: number): void {
    this.busyWaitMs = ms;
    this.db?.pragma(`busy_timeout = ${ms}`);
  }

  /** One write transaction (BEGIN IMMEDIATE: a busy lock fails at its start, before any work). */
  private transaction<T>(fn: (s: Statements) => T): T {
    return this.run((s) => this.db!.transaction(() => fn(s)).immediate());
  }

  /**
   * Writes a row; resolves once it is committed. The puts of one turn of the event loop (a bulk
   * upload writes many at once), and those asked for while the write before them waits, are
   * committed together, one transaction (a WAL append) for all, up to BATCH_MAX_ROWS rows,
   * BATCH_MAX_BYTES bytes and BATCH_MAX_AGE_MS (a put that joins shares the batch's deadline).
   */
  put(key: string, body: Buffer): Promise<void> {
    return this.write('put', body.length, undefined, (s) => {
      s.put.run(key, body.length, Date.now(), body);
      return { result: undefined, bytes: body.length + PAGE_BYTES };
    });
  }

  /**
   * Queues a step: into the last queued batch when it is of the same kind, not started and not
   * full. When `signal` aborts before the step's batch starts, the step is rejected with its
   * reason at once and left out of the batch (the others of the batch run); once the batch has
   * started (a transaction, synchronous), the step completes.
   */
  private write<T>(
    operation: Write['operation'],
    bytes: number,
    signal: AbortSignal | undefined,
    run: (s: Statements) => { result: T; bytes: number },
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queue.isClosed) return reject(new SmallBlobClosedError()); // and opens no batch to join
      if (signal?.aborted) return reject(signal.reason);
      const step: Step = { run, resolve: resolve as (result: unknown) => void, reject };
      if (signal) {
        const drop = (): void => {
          step.dropped = true;
          reject(signal.reason);
        };
        signal.addEventListener('abort', drop, { once: true });
        const done = (): void => signal.removeEventListener('abort', drop);
        step.resolve = (result) => (done(), resolve(result as T));
        step.reject = (err) => (done(), reject(err));
      }
      const open = this.batch;
      if (
        open?.operation === operation &&
        open.steps.length < BATCH_MAX_ROWS &&
        open.bytes + bytes <= BATCH_MAX_BYTES &&
        Date.now() - open.since < BATCH_MAX_AGE_MS
      ) {
        open.steps.push(step);
        open.bytes += bytes;
        return;
      }
      const batch: Batch = { operation, since: Date.now(), steps: [step], bytes };
      // A copy takes no company; a write after this one is committed after it.
      this.batch = operation === 'copy' ? undefined : batch;
      this.queue.push({
        operation,
        since: batch.since,
        attempt: () => this.commit(batch),
        fail: (err) => batch.steps.forEach((p) => p.reject(err)),
      });
    });
  }

  private commit(batch: Batch): void {
    if (this.batch === batch) this.batch = undefined;
    // Steps dropped by their signal (rejected already) are left out; none left, no transaction.
    const steps = batch.steps.filter((step) => !step.dropped);
    if (steps.length === 0) return;
    const results = this.transaction((s) => steps.map((step) => step.run(s)));
    this.checkpointer.wrote(results.reduce((sum, r) => sum + r.bytes, 0));
    steps.forEach((step, i) => step.resolve(results[i]!.result));
  }

  get(key: string): Buffer | undefined {
    return this.read((s) => (s.get.get(key) as { body: Buffer } | undefined)?.body);
  }

  /** The bytes `start..end` (inclusive) and the whole object's size. */
  range(key: string, start: number, end: number): { size: number; body: Buffer } | undefined {
    return this.read(
      (s) => s.range.get(start + 1, end - start + 1, key) as { size: number; body: Buffer } | undefined,
    );
  }

  head(key: string): number | undefined {
    return this.read((s) => (s.head.get(key) as { size: number } | undefined)?.size);
  }

  /**
   * Whether a row was deleted. `signal` (the blob sweeper's deadline) drops the delete while it
   * waits in the queue: it rejects with the signal's reason and the row stays.
   */
  delete(key: string, signal?: AbortSignal): Promise<boolean> {
    return this.write('delete', 0, signal, (s) => {
      const deleted = s.delete.run(key).changes > 0;
      return { result: deleted, bytes: deleted ? PAGE_BYTES : 0 };
    });
  }

  /** Copies (or with `move`, renames) a row; false when `from` has none. */
  copy(from: string, to: string, move: boolean): Promise<boolean> {
    return this.write('copy', 0, undefined, (s) => {
      const copied = s.copy.get(to, Date.now(), from) as { size: number } | undefined;
      if (!copied) return { result: false, bytes: 0 };
      if (move) s.delete.run(from);
      return { result: true, bytes: copied.size + 2 * PAGE_BYTES };
    });
  }

  /** One page (at most LIST_PAGE rows) of the rows whose key starts with `prefix`, after `after`, by key. */
  page(prefix: string, after: string | undefined): BlobListing[] {
    const rows = this.read(
      (s) =>
        (after === undefined ? s.firstPage : s.nextPage).all(
          after ?? prefix,
          prefix + PREFIX_END,
          LIST_PAGE,
        ) as {
          key: string;
          size: number;
          modified_ms: number;
        }[],
    );
    return rows
      .filter((r) => r.key.startsWith(prefix))
      .map((r) => ({ key: r.key, size: r.size, lastModified: new Date(r.modified_ms) }));
  }

  private closeConnection(): void {
    this.db?.close();
    this.db = undefined;
    this.statements = undefined;
  }

  /**
   * Rejects the writes queued or retrying (SmallBlobClosedError), closes the connection and ends
   * the checkpoint worker; later reads and writes fail the same way and open nothing again.
   */
  close(): void {
    this.queue.close();
    this.batch = undefined;
    this.closeConnection();
    this.checkpointer.close();
  }
}

function prepare(db: Database.Database) {
  return {
    put: db.prepare(`insert into small_blobs (key, size, modified_ms, body) values (?, ?, ?, ?)
      on conflict (key) do update set size = excluded.size, modified_ms = excluded.modified_ms, body = excluded.body`),
    get: db.prepare('select body from small_blobs where key = ?'),
    range: db.prepare('select size, substr(body, ?, ?) as body from small_blobs where key = ?'),
    head: db.prepare('select size from small_blobs where key = ?'),
    delete: db.prepare('delete from small_blobs where key = ?'),
    copy: db.prepare(`insert into small_blobs (key, size, modified_ms, body)
      select ?, size, ?, body from small_blobs where key = ?
      on conflict (key) do update set size = excluded.size, modified_ms = excluded.modified_ms, body = excluded.body
      returning size`),
    // From the prefix itself (it may be a key) on the first page, after the cursor on the next.
    firstPage: db.prepare(`select key, size, modified_ms from small_blobs
      where key >= ? and key < ? order by key limit ?`),
    nextPage: db.prepare(`select key, size, modified_ms from small_blobs
      where key > ? and key < ? order by key limit ?`),
  };
}
