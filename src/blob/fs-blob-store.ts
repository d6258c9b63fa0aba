import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import type { BlobListing, BlobObject, BlobStore, ByteRange } from './blob-store.js';

/** Blob store on a local folder: the embedded default. Writes go to a temp file, then rename. */
export class FsBlobStore implements BlobStore {
  readonly kind = 'fs' as const;
  private readonly tmpDir: string;

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
    await mkdir(this.tmpDir, { recursive: true });
    return path.join(this.tmpDir, randomUUID());
  }

  async put(key: string, body: Buffer): Promise<void> {
    const target = this.file(key);
    const tmp = await this.tempFile();
    await writeFile(tmp, body);
    await mkdir(path.dirname(target), { recursive: true });
    await rename(tmp, target);
  }

  async putStream(key: string, body: Readable): Promise<number> {
    const target = this.file(key);
    const tmp = await this.tempFile();
    let size = 0;
    body.on('data', (chunk: Buffer) => (size += chunk.length));
    try {
      await pipeline(body, createWriteStream(tmp));
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await mkdir(path.dirname(target), { recursive: true });
    await rename(tmp, target);
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
    const tmp = await this.tempFile();
    await copyFile(this.file(from), tmp);
    const target = this.file(to);
    await mkdir(path.dirname(target), { recursive: true });
    await rename(tmp, target);
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
