import { close, open } from 'node:fs';
import { liveDiskHandles } from './metrics.js';

// Open files of the edge's disk cache, kept between requests: a file is named by its blob's hash
// and never changes, so one descriptor serves every request of the blob, and a request saves the
// open and the close (two thread-pool round trips each, a tenth of the CPU of a 1 MB Range answer).
// Bounded by count, least recently used first out; a file evicted from the cache (or the handles
// closed) is closed once the last response reading it is done. A file removed behind our back by
// another process sharing the folder is still read whole through its open descriptor (the same
// bytes) until the handle leaves this table.

/** Open files kept at most (per disk cache). */
export const OPEN_FILES_MAX = 64;

interface Handle {
  fd: number;
  /** Responses reading the file now. */
  refs: number;
  /** Out of the table: closed when refs reach 0. */
  dropped: boolean;
}

/** An open file for one response: `release` exactly once when done with it. */
export interface HeldFile {
  fd: number;
  release: () => void;
}

export const openFile = (file: string) =>
  new Promise<number | undefined>((resolve, reject) =>
    open(file, 'r', (err, fd) => {
      if (!err) resolve(fd);
      else if (err.code === 'ENOENT') resolve(undefined);
      else reject(err);
    }),
  );

export class DiskHandles {
  /** Insertion order is access order: the first key is the least recently used. */
  private readonly table = new Map<string, Handle>();
  /** Handles out of the table still read by a response. */
  private draining = 0;

  constructor(private readonly max = OPEN_FILES_MAX) {
    liveDiskHandles.add(this);
  }

  /** Files open now (in the table, and dropped ones still being read). */
  get open(): number {
    return this.table.size + this.draining;
  }

  /** Handles some response is reading. */
  get inUse(): number {
    let n = this.draining;
    for (const handle of this.table.values()) if (handle.refs > 0) n += 1;
    return n;
  }

  /** The open file of a blob when the table holds it. */
  get(hash: string): HeldFile | undefined {
    const handle = this.table.get(hash);
    if (!handle) return undefined;
    this.table.delete(hash);
    this.table.set(hash, handle);
    return this.hold(handle);
  }

  /** Keeps a descriptor just opened (or closes it for the one another request kept meanwhile). */
  add(hash: string, fd: number): HeldFile {
    const other = this.table.get(hash);
    if (other) {
      close(fd, () => undefined);
      return this.hold(other);
    }
    const handle: Handle = { fd, refs: 0, dropped: false };
    this.table.set(hash, handle);
    for (const [old] of this.table) {
      if (this.table.size <= this.max) break;
      this.drop(old);
    }
    return this.hold(handle);
  }

  /** The blob's file is gone (evicted): close its descriptor once nobody reads it. */
  drop(hash: string): void {
    const handle = this.table.get(hash);
    if (!handle) return;
    this.table.delete(hash);
    handle.dropped = true;
    if (handle.refs === 0) close(handle.fd, () => undefined);
    else this.draining += 1;
  }

  close(): void {
    for (const hash of [...this.table.keys()]) this.drop(hash);
    liveDiskHandles.delete(this);
  }

  private hold(handle: Handle): HeldFile {
    handle.refs += 1;
    let released = false;
    return {
      fd: handle.fd,
      release: () => {
        if (released) return;
        released = true;
        handle.refs -= 1;
        if (handle.refs === 0 && handle.dropped) {
          this.draining -= 1;
          close(handle.fd, () => undefined);
        }
      },
    };
  }
}
