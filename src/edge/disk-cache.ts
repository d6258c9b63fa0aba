import { createHash, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { close, fstat, read } from 'node:fs';
import { mkdir, open as openHandle, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { blobKeyForHash, type BlobStore, type ByteRange } from '../blob/index.js';
import type { Logger } from '../observability/index.js';
import { DiskHandles, openFile, type HeldFile } from './disk-handles.js';
import { DiskIndex } from './disk-index.js';
import type { FileSlice } from './file-pump.js';
import { edgeDiskCacheEvents, liveDiskCaches } from './metrics.js';

// The edge's on-disk cache of large blobs (those too large for the in-memory blob cache): one file
// per blob, named by its SHA-256, so a file is never stale and needs no invalidation. A blob is
// read from the blob store once per edge process: concurrent requests share one fill, which writes
// a temp file (`.fill-<pid>-<uuid>.tmp`) at the store's pace whoever is listening, checks the hash,
// and renames it into place; every request of the blob meanwhile reads the temp file as it grows,
// so the first byte goes out as soon as the store sends it. A failed fill removes its temp file:
// nothing is ever under a final name but a whole, verified blob. Several processes may share the
// folder (renames of identical bytes over each other are harmless); each bounds its own index.

/** Bytes read from a fill's temp file per chunk: large reads, few system calls. */
const READ_CHUNK = 512 * 1024;
const BLOB_NAME = /^[0-9a-f]{64}$/;
const TEMP_NAME = /^\.fill-(\d+)-[^/]*\.tmp$/;
/** A temp file this old is a leftover whatever its process. */
const STALE_TEMP_MS = 60 * 60 * 1000;

export type DiskSource = 'disk' | 'fill';

/** A complete file (sent by pumpFile), or a fill in flight (a stream of its temp file). */
export type DiskRead = { source: 'disk'; file: FileSlice } | { source: 'fill'; body: Readable };

const events = {
  hit: edgeDiskCacheEvents.labels({ event: 'hit' }),
  miss: edgeDiskCacheEvents.labels({ event: 'miss' }),
  fill: edgeDiskCacheEvents.labels({ event: 'fill' }),
  failed: edgeDiskCacheEvents.labels({ event: 'fill_failed' }),
  eviction: edgeDiskCacheEvents.labels({ event: 'eviction' }),
};

/** One blob being written: its temp file, how far it got, and the readers still using its fd. */
class Fill extends EventEmitter {
  written = 0;
  finished = false;
  failure: Error | undefined;
  readers = 0;
  closed = false;
  /** Settles once the blob store has answered (rejects: missing blob, store down). */
  readonly started: Promise<void>;
  markStarted!: () => void;
  failStart!: (err: Error) => void;

  constructor(
    readonly hash: string,
    readonly size: number,
    readonly tmp: string,
    readonly handle: FileHandle,
  ) {
    super();
    this.setMaxListeners(0);
    this.started = new Promise<void>((resolve, reject) => {
      this.markStarted = resolve;
      this.failStart = reject;
    });
    // A fill nobody waits for must not be an unhandled rejection.
    this.started.catch(() => undefined);
  }

  release(): void {
    this.readers -= 1;
    this.closeWhenDone();
  }

  closeWhenDone(): void {
    if (!this.finished || this.readers > 0 || this.closed) return;
    this.closed = true;
    void this.handle.close().catch(() => undefined);
  }
}

/** Reads a range of a fill's temp file as the fill writes it. */
class FillReader extends Readable {
  private position: number;
  private readonly last: number;
  private waiting: (() => void) | undefined;

  constructor(
    private readonly fill: Fill,
    range: ByteRange | undefined,
  ) {
    super({ highWaterMark: READ_CHUNK });
    fill.readers += 1;
    this.position = range?.start ?? 0;
    this.last = range?.end ?? fill.size - 1;
  }

  override _read(): void {
    if (this.destroyed) return;
    const fill = this.fill;
    if (this.position > this.last) {
      this.push(null);
      return;
    }
    if (fill.failure) {
      this.destroy(fill.failure);
      return;
    }
    const available = Math.min(fill.written - 1, this.last) - this.position + 1;
    if (available <= 0) {
      this.waiting = () => {
        this.waiting = undefined;
        this._read();
      };
      fill.once('progress', this.waiting);
      return;
    }
    const length = Math.min(available, READ_CHUNK);
    const buffer = Buffer.allocUnsafe(length);
    read(fill.handle.fd, buffer, 0, length, this.position, (err, n) => {
      if (err) return void this.destroy(err);
      if (n === 0) return void this.destroy(new Error(`short read of a fill of blob ${fill.hash}`));
      this.position += n;
      this.push(n < length ? buffer.subarray(0, n) : buffer);
    });
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    if (this.waiting) this.fill.off('progress', this.waiting);
    this.fill.release();
    callback(err);
  }
}

const sizeOfFd = (fd: number) =>
  new Promise<number>((resolve, reject) => fstat(fd, (err, s) => (err ? reject(err) : resolve(s.size))));

const isLive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export class DiskCache {
  private readonly index: DiskIndex;
  private readonly fills = new Map<string, Fill>();
  /** Open files of complete blobs, kept between requests. */
  private readonly handles = new DiskHandles();
  /** Settles once the folder is scanned: false when the cache is off or its folder unusable. */
  private readonly ready: Promise<boolean>;
  private enabled = false;

  constructor(
    private readonly dir: string,
    maxBytes: number,
    private readonly blobStore: BlobStore,
    private readonly logger: Logger | undefined,
  ) {
    this.index = new DiskIndex(maxBytes);
    this.ready = maxBytes > 0 ? this.start() : Promise.resolve(false);
  }

  /** Bytes of complete files (the metrics gauge). */
  get bytes(): number {
    return this.index.bytes;
  }

  /** Resolves once the folder has been scanned (start-up). */
  async started(): Promise<boolean> {
    return this.ready;
  }

  close(): void {
    liveDiskCaches.delete(this);
    this.handles.close();
  }

  private file(hash: string): string {
    return path.join(this.dir, hash);
  }

  /** Rebuilds the index from the folder (oldest files first) and removes the temp files of dead fills. */
  private async start(): Promise<boolean> {
    try {
      await mkdir(this.dir, { recursive: true });
      const found: Array<{ hash: string; size: number; mtimeMs: number }> = [];
      for (const name of await readdir(this.dir)) {
        const full = path.join(this.dir, name);
        const info = await stat(full).catch(() => undefined);
        if (!info?.isFile()) continue;
        const temp = TEMP_NAME.exec(name);
        if (temp) {
          const pid = Number(temp[1]);
          if (pid === process.pid || !isLive(pid) || Date.now() - info.mtimeMs > STALE_TEMP_MS)
            await rm(full, { force: true });
        } else if (BLOB_NAME.test(name)) {
          found.push({ hash: name, size: info.size, mtimeMs: info.mtimeMs });
        }
      }
      found.sort((a, b) => a.mtimeMs - b.mtimeMs);
      for (const { hash, size } of found) this.evict(this.index.add(hash, size));
      this.enabled = true;
      liveDiskCaches.add(this);
      return true;
    } catch (err) {
      this.logger?.warn(
        { err, dir: this.dir },
        'edge disk cache unusable: large files stream from the blob store',
      );
      return false;
    }
  }

  private evict(hashes: string[] | undefined): void {
    for (const hash of hashes ?? []) {
      events.eviction.inc();
      this.handles.drop(hash);
      void rm(this.file(hash), { force: true }).catch(() => undefined);
    }
  }

  /**
   * The bytes of a blob (a range of them) from disk, filling the file first when it is missing;
   * undefined when the blob is not for the disk cache (off, empty, larger than the whole cache):
   * the caller streams it from the blob store. Rejects when the blob store cannot start the fill.
   */
  async open(hash: string, size: number, range: ByteRange | undefined): Promise<DiskRead | undefined> {
    if (!(await this.ready) || !this.enabled) return undefined;
    if (size === 0 || size > this.index.maxBytes || !BLOB_NAME.test(hash)) return undefined;
    if (this.index.touch(hash)) {
      const held = this.handles.get(hash);
      if (held) return this.fromFile(held, size, range);
      const fd = await openFile(this.file(hash));
      if (fd !== undefined && this.index.has(hash))
        return this.fromFile(this.handles.add(hash, fd), size, range);
      if (fd !== undefined) close(fd, () => undefined);
      // Removed behind our back (another process sharing the folder evicted it, or this one).
      else this.index.remove(hash);
    }
    let fill = this.fills.get(hash);
    if (!fill) {
      // Another process sharing the folder may have filled it.
      const fd = this.index.has(hash) ? undefined : await openFile(this.file(hash));
      if (fd !== undefined) {
        if ((await sizeOfFd(fd).catch(() => -1)) === size) {
          if (!this.index.has(hash)) this.evict(this.index.add(hash, size));
          if (this.index.has(hash)) return this.fromFile(this.handles.add(hash, fd), size, range);
        }
        close(fd, () => undefined);
      }
      fill = this.fills.get(hash) ?? (await this.startFill(hash, size));
      if (!fill) return undefined;
    }
    await fill.started;
    if (fill.closed) return this.open(hash, size, range);
    return { body: new FillReader(fill, range), source: 'fill' };
  }

  private fromFile({ fd, release }: HeldFile, size: number, range: ByteRange | undefined): DiskRead {
    events.hit.inc();
    return { source: 'disk', file: { fd, start: range?.start ?? 0, end: range?.end ?? size - 1, release } };
  }

  /** Reserves room, opens a temp file and starts the fill (undefined: it cannot fit). */
  private async startFill(hash: string, size: number): Promise<Fill | undefined> {
    const evicted = this.index.reserve(size);
    if (!evicted) return undefined;
    this.evict(evicted);
    const tmp = path.join(this.dir, `.fill-${process.pid}-${randomUUID()}.tmp`);
    let handle: FileHandle;
    try {
      handle = await openHandle(tmp, 'wx+');
    } catch (err) {
      this.index.release(size);
      throw err;
    }
    // Another request may have started the same fill while the temp file was opened.
    const other = this.fills.get(hash);
    if (other) {
      this.index.release(size);
      void handle.close().then(() => rm(tmp, { force: true }));
      return other;
    }
    events.miss.inc();
    const fill = new Fill(hash, size, tmp, handle);
    this.fills.set(hash, fill);
    void this.run(fill);
    return fill;
  }

  private async run(fill: Fill): Promise<void> {
    try {
      const object = await this.blobStore.get(blobKeyForHash(fill.hash));
      if (!object) throw new Error(`blob ${fill.hash} is missing from the blob store`);
      fill.markStarted();
      const hasher = createHash('sha256');
      for await (const chunk of object.body as AsyncIterable<Buffer>) {
        hasher.update(chunk);
        for (let offset = 0; offset < chunk.length;) {
          const { bytesWritten } = await fill.handle.write(
            chunk,
            offset,
            chunk.length - offset,
            fill.written,
          );
          offset += bytesWritten;
          fill.written += bytesWritten;
        }
        fill.emit('progress');
      }
      if (fill.written !== fill.size || hasher.digest('hex') !== fill.hash)
        throw new Error(`blob ${fill.hash} read back with other bytes (${fill.written} of ${fill.size})`);
      await fill.handle.datasync();
      await rename(fill.tmp, this.file(fill.hash));
      this.index.commit(fill.hash, fill.size);
      events.fill.inc();
    } catch (err) {
      fill.failure = err as Error;
      fill.failStart(err as Error);
      this.index.release(fill.size);
      events.failed.inc();
      this.logger?.warn({ err, blob: fill.hash }, 'edge disk cache fill failed');
      await rm(fill.tmp, { force: true }).catch(() => undefined);
    } finally {
      this.fills.delete(fill.hash);
      fill.finished = true;
      fill.emit('progress');
      fill.closeWhenDone();
    }
  }
}
