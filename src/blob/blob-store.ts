import type { Readable } from 'node:stream';

export interface ByteRange {
  start: number;
  /** Inclusive, as in HTTP Range. */
  end: number;
}

export interface BlobObject {
  body: Readable;
  /** Size of the whole object, not of the range. */
  size: number;
}

export interface BlobListing {
  key: string;
  size: number;
  lastModified: Date;
}

/**
 * Where file bytes live. Keys are flat strings such as `blobs/<sha256>`; callers make them
 * content-addressed, so an object once written under a `blobs/` key never changes.
 */
export interface BlobStore {
  readonly kind: 'fs' | 's3';
  put(key: string, body: Buffer): Promise<void>;
  /** Streams `body` into the store without buffering it whole; resolves with the byte count. */
  putStream(key: string, body: Readable): Promise<number>;
  get(key: string, range?: ByteRange): Promise<BlobObject | undefined>;
  getBuffer(key: string): Promise<Buffer | undefined>;
  head(key: string): Promise<{ size: number } | undefined>;
  /** Renames an object (overwriting the target). */
  move(from: string, to: string): Promise<void>;
  /** Copies an object (overwriting the target); the source stays. */
  copy(from: string, to: string): Promise<void>;
  /** `signal` aborts a delete still in flight (the blob sweeper's deadline). */
  delete(key: string, signal?: AbortSignal): Promise<void>;
  list(prefix: string): AsyncIterable<BlobListing>;
  ping(): Promise<void>;
}

export const blobKeyForHash = (sha256Hex: string): string => `blobs/${sha256Hex}`;
