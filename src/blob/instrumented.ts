import type { Readable } from 'node:stream';
import { timed } from '../observability/index.js';
import type { BlobListing, BlobObject, BlobStore, ByteRange } from './blob-store.js';
import { blobOperationDuration } from './metrics.js';

/** Wraps a store so every operation reports latency to Prometheus and a span to OpenTelemetry. */
export class InstrumentedBlobStore implements BlobStore {
  readonly kind: BlobStore['kind'];

  constructor(private readonly inner: BlobStore) {
    this.kind = inner.kind;
  }

  private op<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    return timed(blobOperationDuration, { store: this.kind, operation }, `blob.${operation}`, fn);
  }

  put(key: string, body: Buffer) {
    return this.op('put', () => this.inner.put(key, body));
  }
  putStream(key: string, body: Readable) {
    return this.op('put_stream', () => this.inner.putStream(key, body));
  }
  get(key: string, range?: ByteRange): Promise<BlobObject | undefined> {
    return this.op('get', () => this.inner.get(key, range));
  }
  getBuffer(key: string) {
    return this.op('get_buffer', () => this.inner.getBuffer(key));
  }
  head(key: string) {
    return this.op('head', () => this.inner.head(key));
  }
  move(from: string, to: string) {
    return this.op('move', () => this.inner.move(from, to));
  }
  copy(from: string, to: string) {
    return this.op('copy', () => this.inner.copy(from, to));
  }
  delete(key: string, signal?: AbortSignal) {
    return this.op('delete', () => this.inner.delete(key, signal));
  }
  list(prefix: string): AsyncIterable<BlobListing> {
    return this.inner.list(prefix);
  }
  ping() {
    return this.op('ping', () => this.inner.ping());
  }
}
