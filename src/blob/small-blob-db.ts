import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { locateNativeParts } from '../config/index.js';
import type { BlobListing } from './blob-store.js';

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

/** How long a statement waits for another process's write (e.g. `hostplane admin` on the same data dir). */
const BUSY_TIMEOUT_MS = 5_000;

/** Rows read by one statement of a listing (the sweeper deletes between pages). */
export const LIST_PAGE = 1000;

/** Above any character a key may hold after a prefix: `key < prefix + this` bounds a prefix's range. */
const PREFIX_END = '\u{10FFFF}';

/** SQLite's answers that mean the file went away under an open connection (its folder was removed). */
const GONE = new Set(['SQLITE_READONLY_DBMOVED', 'SQLITE_CANTOPEN', 'SQLITE_IOERR_DELETE', 'SQLITE_NOTADB']);

/**
 * The small objects' database: WAL and synchronous=NORMAL, the promise of the files beside it (a
 * crashed process loses nothing, a power cut may lose the last writes). Every call is one prepared
 * statement on a primary key (or one page of a key range), synchronous on the caller's thread:
 * short. Opened on first use; opened again when its folder was removed under it.
 */
export class SmallBlobDb {
  private db: Database.Database | undefined;
  private statements: ReturnType<typeof prepare> | undefined;
  private queued: { key: string; body: Buffer; resolve: () => void; reject: (err: unknown) => void }[] = [];

  constructor(private readonly dir: string) {}

  private open(): ReturnType<typeof prepare> {
    if (this.statements) return this.statements;
    mkdirSync(this.dir, { recursive: true });
    const db = new Database(path.join(this.dir, SMALL_BLOB_DB_FILE), {
      nativeBinding: locateNativeParts().binding,
      timeout: BUSY_TIMEOUT_MS,
    });
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
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
  private run<T>(fn: (s: ReturnType<typeof prepare>) => T): T {
    try {
      return fn(this.open());
    } catch (err) {
      if (!GONE.has((err as { code?: string }).code ?? '')) throw err;
      this.close();
      return fn(this.open());
    }
  }

  /**
   * Writes a row; resolves once it is committed. The puts of one turn of the event loop (a bulk
   * upload writes many at once) are committed together, one transaction (a WAL append) for all.
   */
  put(key: string, body: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queued.push({ key, body, resolve, reject });
      if (this.queued.length === 1) setImmediate(() => this.commitQueued());
    });
  }

  private commitQueued(): void {
    const batch = this.queued;
    this.queued = [];
    const now = Date.now();
    try {
      this.run((s) =>
        this.db!.transaction(() => batch.forEach((p) => s.put.run(p.key, p.body.length, now, p.body)))(),
      );
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    for (const p of batch) p.resolve();
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
  delete(key: string): boolean {
    return this.run((s) => s.delete.run(key).changes > 0);
  }

  /** Copies (or with `move`, renames) a row; false when `from` has none. */
  copy(from: string, to: string, move: boolean): boolean {
    return this.run((s) =>
      this.db!.transaction(() => {
        if (s.copy.run(to, Date.now(), from).changes === 0) return false;
        if (move) s.delete.run(from);
        return true;
      })(),
    );
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

  close(): void {
    this.db?.close();
    this.db = undefined;
    this.statements = undefined;
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
      on conflict (key) do update set size = excluded.size, modified_ms = excluded.modified_ms, body = excluded.body`),
    // From the prefix itself (it may be a key) on the first page, after the cursor on the next.
    firstPage: db.prepare(`select key, size, modified_ms from small_blobs
      where key >= ? and key < ? order by key limit ?`),
    nextPage: db.prepare(`select key, size, modified_ms from small_blobs
      where key > ? and key < ? order by key limit ?`),
  };
}
