import { createReadStream } from 'node:fs';
import {
  copyFile,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import type { BlobListing, BlobObject, BlobStore, ByteRange } from './blob-store.js';
import {
  LIST_PAGE,
  SMALL_BLOB_DB_FILE,
  SMALL_BLOB_MAX_BYTES,
  SmallBlobDb,
  type SmallBlobOptions,
} from './small-blob-db.js';

/** A Readable of bytes already in memory (byte mode, as a file's stream). */
const bytesStream = (bytes: Buffer): Readable => Readable.from([bytes], { objectMode: false });

/**
 * Blob store on a local folder: the embedded default. Writes go to a temp file, then rename, so a
 * reader never sees a partial object under its key (no fsync: a machine that loses power may lose
 * the last writes, as PGlite's own; a process that crashes loses none).
 *
 * A put is four round trips to the thread pool (open, write and close the temp file, rename it)
 * when the folders exist: the temp folder is made once per store (again if a write finds it
 * gone), a key's folder only when the rename finds it missing. A deploy's bulk upload writes
 * hundreds of small blobs, each of which paid two more round trips for folders already there.
 *
 * Small objects handed over whole (put, and copy or move of a small object: SMALL_BLOB_MAX_BYTES)
 * are rows of one SQLite database in the folder instead (small-blob-db.ts), a fraction of a
 * file's creation. Streamed puts and larger objects stay files. A key is looked up in the
 * database first, then as a file, so the files of folders written before stay readable; a put of
 * one kind removes the other kind's copy of its key when it could shadow the new bytes (a file
 * under a row), a delete removes both, and a listing gives both (the database's rows first).
 */
export class FsBlobStore implements BlobStore {
  readonly kind = 'fs' as const;
  private readonly tmpDir: string;
  /** The temp folder was made (or found) by this store; retried when a write finds it gone. */
  private tmpReady = false;
  private readonly small: SmallBlobDb;

  constructor(
    private readonly root: string,
    options: SmallBlobOptions = {},
  ) {
    this.tmpDir = path.join(root, '.tmp');
    this.small = new SmallBlobDb(root, options);
  }

  /** Closes the small objects' database and its checkpoint worker (tests; a process's exit otherwise). */
  close(): void {
    this.small.close();
  }

  /** Checks a key (as `file` does) and returns it. */
  private key(key: string): string {
    this.file(key);
    return key;
  }

  private file(key: string): string {
    if (key.includes('..') || key.startsWith('/') || key.includes('\\') || key.includes('\0')) {
      throw new Error(`invalid blob key: ${key}`);
    }
    return path.join(this.root, key);
  }

  private async tempFile(): Promise<string> {
    if (!this.tmpReady) {
      await mkdir(this.tmpDir, { recursive: true });
      this.tmpReady = true;
    }
    return path.join(this.tmpDir, randomUUID());
  }

  /** Runs `write` on a new temp file's path, making the temp folder again if it went away. */
  private async inTemp(write: (tmp: string) => Promise<unknown>): Promise<string> {
    const tmp = await this.tempFile();
    try {
      await write(tmp);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.tmpReady = false;
      await this.tempFile();
      await write(tmp);
    }
    return tmp;
  }

  /** Renames a written temp file to `target`, making its folder when the rename finds none. */
  private async publish(tmp: string, target: string): Promise<void> {
    try {
      await rename(tmp, target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        await rm(tmp, { force: true });
        throw err;
      }
      try {
        await mkdir(path.dirname(target), { recursive: true });
        await rename(tmp, target);
      } catch (again) {
        await rm(tmp, { force: true });
        throw again;
      }
    }
  }

  async put(key: string, body: Buffer): Promise<void> {
    const target = this.file(key);
    // A file of the key from before stays (a row shadows it; a delete removes both): the keys
    // written again are content-addressed, with the same bytes, and removing it costs a syscall.
    if (body.length <= SMALL_BLOB_MAX_BYTES) return await this.small.put(key, body);
    await this.publish(await this.inTemp((tmp) => writeFile(tmp, body)), target);
    await this.small.delete(key);
  }

  async putStream(key: string, body: Readable): Promise<number> {
    const target = this.file(key);
    // Opened before the body is read: a missing temp folder is made again while nothing is lost.
    let handle: FileHandle | undefined;
    const tmp = await this.inTemp(async (path) => (handle = await open(path, 'w')));
    let size = 0;
    body.on('data', (chunk: Buffer) => (size += chunk.length));
    try {
      await pipeline(body, handle!.createWriteStream());
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await this.publish(tmp, target);
    await this.small.delete(key);
    return size;
  }

  async get(key: string, range?: ByteRange): Promise<BlobObject | undefined> {
    const file = this.file(key);
    if (range) {
      const row = this.small.range(key, range.start, range.end);
      if (row) return { body: bytesStream(row.body), size: row.size };
    } else {
      const bytes = this.small.get(key);
      if (bytes) return { body: bytesStream(bytes), size: bytes.length };
    }
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) return undefined;
    const body = createReadStream(file, range ? { start: range.start, end: range.end } : {});
    return { body, size: info.size };
  }

  async getBuffer(key: string): Promise<Buffer | undefined> {
    const bytes = this.small.get(this.key(key));
    if (bytes) return bytes;
    return readFile(this.file(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    const size = this.small.head(this.key(key));
    if (size !== undefined) return { size };
    const info = await stat(this.file(key)).catch(() => undefined);
    return info?.isFile() ? { size: info.size } : undefined;
  }

  async move(from: string, to: string): Promise<void> {
    const target = this.file(to);
    const source = this.file(from);
    // Onto itself: nothing to do (the row's copy and the source's removal would delete it).
    if (source === target) return;
    if (await this.small.copy(from, to, true)) {
      // Files of the keys from before: the source's would read again under its key.
      await Promise.all([rm(source, { force: true }), rm(target, { force: true })]);
      return;
    }
    await mkdir(path.dirname(target), { recursive: true });
    await rename(source, target);
    await this.small.delete(to);
  }

  /** To a row when the object is small (from a row or a file), else file to file. */
  async copy(from: string, to: string): Promise<void> {
    const target = this.file(to);
    const source = this.file(from);
    if (await this.small.copy(from, to, false)) return;
    const info = await stat(source);
    if (info.isFile() && info.size <= SMALL_BLOB_MAX_BYTES) {
      const bytes = await readFile(source);
      if (bytes.length <= SMALL_BLOB_MAX_BYTES) return await this.small.put(to, bytes);
    }
    // Through a temp file and a rename, so a reader never sees a half-copied object.
    const tmp = await this.inTemp((tmp) => copyFile(source, tmp));
    await this.publish(tmp, target);
    await this.small.delete(to);
  }

  /**
   * `signal` (the sweeper's deadline) drops the row's delete while it waits in the write queue,
   * and the file's removal after it: an aborted delete rejects with the signal's reason and sends
   * nothing more, so the object stays (as a row, or as a file when the row's delete had run; a
   * later sweep removes it). A delete sent after the deadline could remove bytes an upload has
   * written again since (files/blob-claims.ts).
   */
  async delete(key: string, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const file = this.file(key);
    await this.small.delete(key, signal);
    signal?.throwIfAborted();
    await rm(file, { force: true });
  }

  /** The database's rows by key, a page per statement, then the files that no row shadows. */
  async *list(prefix: string): AsyncIterable<BlobListing> {
    for (let after: string | undefined; ;) {
      const page = this.small.page(prefix, after);
      yield* page;
      if (page.length < LIST_PAGE) break;
      after = page[page.length - 1]!.key;
    }
    const dir = this.file(prefix.endsWith('/') ? prefix : path.posix.dirname(prefix) + '/');
    const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      const full = path.join(entry.parentPath, entry.name);
      const key = path.relative(this.root, full).split(path.sep).join('/');
      // In-flight writes live under .tmp/ and are not objects yet.
      if (!key.startsWith(prefix) || key.startsWith('.tmp/') || key.startsWith(SMALL_BLOB_DB_FILE)) continue;
      if (this.small.head(key) !== undefined) continue;
      const info = await stat(full).catch(() => undefined);
      if (info) yield { key, size: info.size, lastModified: info.mtime };
    }
  }

  async ping(): Promise<void> {
    await mkdir(this.root, { recursive: true });
  }
}
