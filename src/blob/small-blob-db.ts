import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { locateNativeParts } from '../config/index.js';
import type { Logger } from '../observability/index.js';
import type { BlobListing } from './blob-store.js';
import { smallBlobBusyRetries } from './metrics.js';
import { SmallBlobCheckpointer } from './small-blob-checkpoint.js';

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
 * no writer, only for another connection's rebuilding of the WAL index after a crash (short),
 * and should not fail for that; a write that stays busy is retried from a timer (BUSY_GIVE_UP_MS),
 * so this is all any one attempt blocks the event loop.
 */
const BUSY_WAIT_MS = 2;

/** How long a write (from its call) is retried while another connection holds the write lock. */
export const BUSY_GIVE_UP_MS = 5_000;

/** The longest pause between two attempts of a busy write (the pauses double from 1 ms). */
const RETRY_MAX_PAUSE_MS = 50;

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
}

type Statements = ReturnType<typeof prepare>;

/** A write waiting for its turn: `attempt` runs it (synchronously) and settles its caller. */
interface Write {
  operation: 'put' | 'copy' | 'delete';
  /** When it was asked for: it gives up BUSY_GIVE_UP_MS later. */
  since: number;
  attempt(): void;
  fail(err: unknown): void;
}

interface QueuedPut {
  key: string;
  body: Buffer;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * The small objects' database: WAL and synchronous=NORMAL, the promise of the files beside it (a
 * crashed process loses nothing, a power cut may lose the last writes). Reads are one prepared
 * statement on a primary key (or one page of a key range), synchronous on the caller's thread:
 * short, and in WAL mode they wait for no writer. Writes are queued and run one at a time in the
 * order they were asked for; one that meets another connection's write lock is retried from a
 * timer (the event loop keeps turning) until BUSY_GIVE_UP_MS. The WAL is checkpointed by a worker
 * (small-blob-checkpoint.ts), not inside a commit. Opened on first use; opened again when its
 * folder was removed under it.
 */
export class SmallBlobDb {
  private db: Database.Database | undefined;
  private statements: Statements | undefined;
  private readonly writes: Write[] = [];
  private writing = false;
  /** The puts of the last queued write while it has not started: later puts join it. */
  private batch: QueuedPut[] | undefined;
  private readonly giveUpMs: number;
  private readonly checkpointer: SmallBlobCheckpointer;

  constructor(
    private readonly dir: string,
    options: SmallBlobOptions = {},
  ) {
    this.giveUpMs = options.busyGiveUpMs ?? BUSY_GIVE_UP_MS;
    this.checkpointer = new SmallBlobCheckpointer(
      path.join(dir, SMALL_BLOB_DB_FILE),
      () => locateNativeParts().binding,
      options.checkpointBytes,
      options.logger,
    );
  }

  private open(): Statements {
    if (this.statements) return this.statements;
    mkdirSync(this.dir, { recursive: true });
    const db = new Database(path.join(this.dir, SMALL_BLOB_DB_FILE), {
      nativeBinding: locateNativeParts().binding,
      timeout: BUSY_WAIT_MS,
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

  /** One write transaction (BEGIN IMMEDIATE: a busy lock fails at its start, before any work). */
  private transaction<T>(fn: (s: Statements) => T): T {
    return this.run((s) => this.db!.transaction(() => fn(s)).immediate());
  }

  /**
   * Writes a row; resolves once it is committed. The puts of one turn of the event loop (a bulk
   * upload writes many at once), and those asked for while the write before them waits, are
   * committed together, one transaction (a WAL append) for all.
   */
  put(key: string, body: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!this.batch) {
        const batch: QueuedPut[] = [];
        this.enqueue({
          operation: 'put',
          since: Date.now(),
          attempt: () => {
            if (this.batch === batch) this.batch = undefined;
            const now = Date.now();
            this.transaction((s) => batch.forEach((p) => s.put.run(p.key, p.body.length, now, p.body)));
            this.checkpointer.wrote(batch.reduce((sum, p) => sum + p.body.length + PAGE_BYTES, 0));
            for (const p of batch) p.resolve();
          },
          fail: (err) => batch.forEach((p) => p.reject(err)),
        });
        this.batch = batch;
      }
      this.batch.push({ key, body, resolve, reject });
    });
  }

  /** A write other than a put: its own transaction, in its turn. */
  private write<T>(operation: Write['operation'], fn: (s: Statements) => { result: T; bytes: number }) {
    return new Promise<T>((resolve, reject) =>
      this.enqueue({
        operation,
        since: Date.now(),
        attempt: () => {
          const { result, bytes } = this.transaction(fn);
          this.checkpointer.wrote(bytes);
          resolve(result);
        },
        fail: reject,
      }),
    );
  }

  private enqueue(write: Write): void {
    this.batch = undefined; // a put after this write is committed after it
    this.writes.push(write);
    if (this.writing) return;
    this.writing = true;
    setImmediate(() => this.next());
  }

  /** Runs the queued writes in order (a loop, not a recursion: the queue may be long) until one is busy. */
  private next(): void {
    for (let write = this.writes.shift(); write; write = this.writes.shift()) {
      if (!this.attempt(write, 0)) return; // its retry goes on from a timer
    }
    this.writing = false;
  }

  /** Runs a write once; false when it met the lock and is retried later (with backoff). */
  private attempt(write: Write, retries: number): boolean {
    try {
      write.attempt();
    } catch (err) {
      const left = write.since + this.giveUpMs - Date.now();
      if (!((err as { code?: string }).code ?? '').startsWith('SQLITE_BUSY') || left <= 0) {
        write.fail(err);
        return true;
      }
      smallBlobBusyRetries.inc({ operation: write.operation });
      const pause = Math.min(2 ** retries, RETRY_MAX_PAUSE_MS, left);
      setTimeout(() => {
        if (this.attempt(write, retries + 1)) this.next();
      }, pause);
      return false;
    }
    return true;
  }

  get(key: string): Buffer | undefined {
    return this.run((s) => (s.get.get(key) as { body: Buffer } | undefined)?.body);
  }

  /** The bytes `start..end` (inclusive) and the whole object's size. */
  range(key: string, start: number, end: number): { size: number; body: Buffer } | undefined {
    return this.run(
      (s) => s.range.get(start + 1, end - start + 1, key) as { size: number; body: Buffer } | undefined,
    );
  }

  head(key: string): number | undefined {
    return this.run((s) => (s.head.get(key) as { size: number } | undefined)?.size);
  }

  /** Whether a row was deleted. */
  delete(key: string): Promise<boolean> {
    return this.write('delete', (s) => ({ result: s.delete.run(key).changes > 0, bytes: PAGE_BYTES }));
  }

  /** Copies (or with `move`, renames) a row; false when `from` has none. */
  copy(from: string, to: string, move: boolean): Promise<boolean> {
    return this.write('copy', (s) => {
      const copied = s.copy.get(to, Date.now(), from) as { size: number } | undefined;
      if (!copied) return { result: false, bytes: 0 };
      if (move) s.delete.run(from);
      return { result: true, bytes: copied.size + 2 * PAGE_BYTES };
    });
  }

  /** One page (at most LIST_PAGE rows) of the rows whose key starts with `prefix`, after `after`, by key. */
  page(prefix: string, after: string | undefined): BlobListing[] {
    const rows = this.run(
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

  /** Closes the connection and ends the checkpoint worker (writes still queued open them again). */
  close(): void {
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
