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
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import type { BlobListing, BlobObject, BlobStore, ByteRange } from './blob-store.js';

/**
 * Blob store on a local folder: the embedded default. Writes go to a temp file, then rename, so a
 * reader never sees a partial object under its key (no fsync: a machine that loses power may lose
 * the last writes, as PGlite's own; a process that crashes loses none).
 *
 * A put is four round trips to the thread pool (open, write and close the temp file, rename it)
 * when the folders exist: the temp folder is made once per store (again if a write finds it
 * gone), a key's folder only when the rename finds it missing. A deploy's bulk upload writes
 * hundreds of small blobs, each of which paid two more round trips for folders already there.
 */
export class FsBlobStore implements BlobStore {
  readonly kind = 'fs' as const;
  private readonly tmpDir: string;
  /** The temp folder was made (or found) by this store; retried when a write finds it gone. */
  private tmpReady = false;

  constructor(private readonly root: string) {
    this.tmpDir = path.join(root, '.tmp');
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
    await this.publish(await this.inTemp((tmp) => writeFile(tmp, body)), target);
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
    return size;
  }

  async get(key: string, range?: ByteRange): Promise<BlobObject | undefined> {
    const file = this.file(key);
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) return undefined;
    const body = createReadStream(file, range ? { start: range.start, end: range.end } : {});
    return { body, size: info.size };
  }

  async getBuffer(key: string): Promise<Buffer | undefined> {
    return readFile(this.file(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    const info = await stat(this.file(key)).catch(() => undefined);
    return info?.isFile() ? { size: info.size } : undefined;
  }

  async move(from: string, to: string): Promise<void> {
    const target = this.file(to);
    await mkdir(path.dirname(target), { recursive: true });
    await rename(this.file(from), target);
  }

  async copy(from: string, to: string): Promise<void> {
    // Through a temp file and a rename, so a reader never sees a half-copied object.
    const tmp = await this.inTemp((tmp) => copyFile(this.file(from), tmp));
    await this.publish(tmp, this.file(to));
  }

  async delete(key: string, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    await rm(this.file(key), { force: true });
  }

  async *list(prefix: string): AsyncIterable<BlobListing> {
    const dir = this.file(prefix.endsWith('/') ? prefix : path.posix.dirname(prefix) + '/');
    const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      const full = path.join(entry.parentPath, entry.name);
      const key = path.relative(this.root, full).split(path.sep).join('/');
      // In-flight writes live under .tmp/ and are not objects yet.
      if (!key.startsWith(prefix) || key.startsWith('.tmp/')) continue;
      const info = await stat(full).catch(() => undefined);
      if (info) yield { key, size: info.size, lastModified: info.mtime };
    }
  }

  async ping(): Promise<void> {
    await mkdir(this.root, { recursive: true });
  }
}
