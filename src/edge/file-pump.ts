import { read } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { edgeReadBuffers } from './metrics.js';

// Sends bytes of a disk-cache file to a response the way a static server does: large reads into
// buffers reused from one small pool, instead of a fresh buffer per chunk (createReadStream), whose
// external memory drives the garbage collector over the edge's whole heap several times a second
// at video rates. A buffer goes back to the pool only from the callback of the `res.write` that
// sent it: the socket has then handed its bytes to the kernel (or dropped them, the connection
// gone), so nothing still points into it. A write whose callback has not fired when the pump ends
// (node:http drops a write's callback when the connection goes at the wrong moment) is counted out
// of use then and its buffer left to the garbage collector: never reused while it may be in use.

/** Bytes per read and per pooled buffer. */
export const READ_BUFFER_BYTES = 512 * 1024;
/**
 * Bytes of idle buffers the pool keeps for reuse (process-wide): 32 buffers, two for each of 16
 * responses streaming at once. Busier moments allocate more, and what comes back beyond the cap
 * is left to the garbage collector, so the pool never holds more than this between bursts.
 */
export const READ_POOL_MAX_BYTES = 16 * 1024 * 1024;
/** Buffers per response at most: one on the socket while the next is read. */
const DEPTH = 2;

export class BufferPool {
  private readonly free: Buffer[] = [];
  /** Buffers taken and not given back (in a read, or on a socket). */
  inUse = 0;
  /** Buffers ever allocated (a count that stops growing once the pool serves the load). */
  allocated = 0;

  constructor(
    readonly bufferBytes: number,
    readonly maxIdleBytes: number,
  ) {}

  get idleBytes(): number {
    return this.free.length * this.bufferBytes;
  }

  take(): Buffer {
    this.inUse += 1;
    const buffer = this.free.pop();
    if (buffer) return buffer;
    this.allocated += 1;
    return Buffer.allocUnsafeSlow(this.bufferBytes);
  }

  give(buffer: Buffer): void {
    this.inUse -= 1;
    if (this.idleBytes + this.bufferBytes <= this.maxIdleBytes) this.free.push(buffer);
  }

  /** Buffers that may still be in use (writes whose callbacks never came): counted out, not kept. */
  letGo(count: number): void {
    this.inUse -= count;
  }
}

export const readPool = new BufferPool(READ_BUFFER_BYTES, READ_POOL_MAX_BYTES);
edgeReadBuffers.pool = readPool;

/** An open file of the disk cache; `release` is called exactly once when the pump is done with it. */
export interface FileSlice {
  fd: number;
  /** First and last byte to send (inclusive). */
  start: number;
  end: number;
  release: () => void;
}

/**
 * Writes bytes `start..end` of the file to `res` (whose head is written) and ends it; resolves
 * when the response is over (complete, the client gone, or a read failed: the response is then
 * destroyed, its length unmet) and the file released. Reading stops while `res` needs to drain.
 */
export function pumpFile(file: FileSlice, res: ServerResponse, pool: BufferPool = readPool): Promise<void> {
  return new Promise<void>((resolve) => {
    let position = file.start;
    let buffers = 0;
    let reading = false;
    let released = false;
    let over = false;
    let held: { chunk: Buffer; buffer: Buffer } | undefined;
    /** Buffers written to `res` whose write callbacks have not fired yet. */
    const writing = new Set<Buffer>();

    // The file is released once no read is in flight; the promise settles once the answer is
    // over and the file released.
    const release = () => {
      if (released || reading) return;
      released = true;
      file.release();
      if (over) resolve();
    };
    const finish = (err?: Error) => {
      if (over) return;
      over = true;
      res.off('drain', onDrain);
      res.off('close', onClose);
      res.off('socket', next);
      if (held) {
        pool.give(held.buffer);
        buffers -= 1;
        held = undefined;
      }
      // Their callbacks may never come (see the top of this file); a late one finds it done.
      pool.letGo(writing.size);
      writing.clear();
      if (err) res.destroy(err);
      release();
      if (released) resolve();
    };
    const onClose = () => finish();
    const onDrain = () => {
      if (held && !over) {
        const { chunk, buffer } = held;
        held = undefined;
        send(chunk, buffer);
      }
      next();
    };
    const gone = () => res.destroyed || res.socket?.destroyed === true;

    const send = (chunk: Buffer, buffer: Buffer) => {
      if (gone()) {
        pool.give(buffer);
        buffers -= 1;
        finish();
        return;
      }
      writing.add(buffer);
      res.write(chunk, () => {
        if (!writing.delete(buffer)) return; // counted out when the pump ended
        pool.give(buffer);
        buffers -= 1;
        next();
      });
      if (position > file.end && !held && !reading) {
        res.end();
        // 'close' follows once the last bytes are out; the file is no longer needed.
        release();
      }
    };

    const next = () => {
      if (over || reading || held || position > file.end || buffers >= DEPTH) return;
      reading = true;
      buffers += 1;
      const buffer = pool.take();
      const length = Math.min(buffer.length, file.end - position + 1);
      read(file.fd, buffer, 0, length, position, (err, n) => {
        reading = false;
        if (over || err || n === 0) {
          pool.give(buffer);
          buffers -= 1;
          if (over) release();
          else finish(err ?? new Error(`short read of a disk-cache file at byte ${position}`));
          return;
        }
        position += n;
        const chunk = n < buffer.length ? buffer.subarray(0, n) : buffer;
        if (res.writableNeedDrain) held = { chunk, buffer };
        else send(chunk, buffer);
        next();
      });
    };

    res.on('drain', onDrain);
    res.on('close', onClose);
    if (gone()) finish();
    // A response queued behind others on a pipelined connection has no socket until its turn:
    // node:http holds its writes meanwhile, and drops them with their callbacks never called when
    // the connection closes first (the buffers would stay counted in use). Nothing is read before
    // the turn comes; a 'close' before it ends the pump.
    else if (!res.socket) res.once('socket', next);
    else next();
  });
}
