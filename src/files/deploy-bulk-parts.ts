import busboy from 'busboy';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Request, Response } from 'express';
import { AppError } from '../errors/index.js';
import { MAX_BULK_BYTES, MAX_BULK_PARTS, MAX_VIDEO_BYTES } from './limits.js';

/*
 * The parts of a bulk upload's multipart body, one at a time and in order: busboy parses the body
 * as it arrives, and a part's stream is read only when the caller asks for it, so a slow commit
 * holds the request back (backpressure) instead of piling parts up in memory.
 */

export { MAX_BULK_BYTES, MAX_BULK_PARTS } from './limits.js';

export interface BulkPart {
  /** The part's field name (the blob's SHA-256, when the client follows the contract). */
  name: string;
  stream: Readable;
}

export interface BulkParts {
  /** The next part, or undefined once the body is over; rejects with the body's refusal. */
  next(): Promise<BulkPart | undefined>;
  /** Stops reading (a refusal): the rest of the body is drained and dropped. */
  abandon(): void;
  /** The body's own refusal (malformed, too large, aborted), once there is one. */
  failure(): unknown;
}

const malformed = () =>
  new AppError('INVALID_REQUEST', { message: 'Malformed multipart/form-data request.' });
export const tooManyParts = () =>
  new AppError('INVALID_REQUEST', {
    message: `A bulk upload carries at most ${MAX_BULK_PARTS} parts: send the rest in another request.`,
  });

/** The parts of `req`'s multipart body (the caller checked its Content-Type). */
export function bulkParts(req: Request, res: Response): BulkParts {
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      // Every part must be a file part (a filename, or Content-Type: application/octet-stream): a
      // plain field would be decoded as text. busboy reports `limit` on reaching fileSize, so one
      // byte of headroom lets the largest blob through.
      limits: { files: MAX_BULK_PARTS, fields: 0, fileSize: MAX_VIDEO_BYTES + 1, headerPairs: 20 },
    });
  } catch {
    return {
      next: () => Promise.reject(malformed()),
      abandon: () => undefined,
      failure: () => malformed(),
    };
  }
  const queue: BulkPart[] = [];
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  let abandoned = false;
  /** The part handed out last: a failure errors it, so that its reader stops too. */
  let current: Readable | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const fail = (err: unknown) => {
    failure ??= err;
    if (current && !current.readableEnded) current.destroy(err instanceof Error ? err : undefined);
    notify();
  };
  const abandon = () => {
    if (abandoned) return;
    abandoned = true;
    req.unpipe(parser);
    req.resume();
    for (const part of queue.splice(0)) part.stream.resume();
    parser.destroy();
  };

  let seen = 0;
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > MAX_BULK_BYTES && failure === undefined) {
      fail(new AppError('PAYLOAD_TOO_LARGE'));
      abandon();
    }
  });
  parser.on('file', (name, stream) => {
    // A body that ends mid-part errors this stream; the parser's own error event answers it.
    stream.on('error', () => undefined);
    if (abandoned) {
      stream.resume();
      return;
    }
    queue.push({ name, stream });
    notify();
  });
  parser.on('filesLimit', () => fail(tooManyParts()));
  parser.on('fieldsLimit', () =>
    fail(
      new AppError('INVALID_REQUEST', {
        message:
          'Every part must be a file part (with a filename, or Content-Type: application/octet-stream), named by the SHA-256 of its bytes.',
      }),
    ),
  );
  parser.on('error', () => fail(malformed()));
  parser.on('close', () => {
    ended = true;
    notify();
  });
  req.on('aborted', () =>
    fail(new AppError('UPLOAD_ABORTED', { message: 'The upload was aborted before it completed.' })),
  );
  res.on('close', () => {
    if (!res.writableFinished) fail(new AppError('UPLOAD_ABORTED', { message: 'The client went away.' }));
  });
  req.pipe(parser);

  return {
    abandon,
    failure: () => failure,
    async next() {
      for (;;) {
        if (failure !== undefined) throw failure;
        const part = queue.shift();
        if (part) {
          current = part.stream;
          return part;
        }
        if (ended) return undefined;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}

export interface ReadPart {
  chunks: Buffer[];
  size: number;
  /** The SHA-256 of the bytes read (complete only when `ended`). */
  hash: string | undefined;
  /** The part ended within `max` bytes; else the stream is paused after more than `max`. */
  ended: boolean;
  /** busboy cut the part at its size limit. */
  truncated: boolean;
}

/** Reads a part up to `max` bytes, hashing as it goes; stops (paused) once it passes `max`. */
export function readUpTo(stream: Readable, max: number): Promise<ReadPart> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const hasher = createHash('sha256');
    let size = 0;
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      hasher.update(chunk);
      if (size > max) {
        stream.pause();
        cleanup();
        resolve({ chunks, size, hash: undefined, ended: false, truncated: false });
      }
    };
    const onEnd = () => {
      cleanup();
      const truncated = (stream as Readable & { truncated?: boolean }).truncated === true;
      resolve({ chunks, size, hash: hasher.digest('hex'), ended: true, truncated });
    };
    const onError = (err: unknown) => {
      cleanup();
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}
