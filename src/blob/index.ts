import path from 'node:path';
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/index.js';
import type { BlobStore } from './blob-store.js';
import { FsBlobStore } from './fs-blob-store.js';
import { InstrumentedBlobStore } from './instrumented.js';
import { S3BlobStore } from './s3-blob-store.js';

export * from './blob-store.js';
export { FsBlobStore, InstrumentedBlobStore, S3BlobStore };

/** S3 when a bucket is configured, otherwise `<data dir>/files` on local disk (`logger`: its checkpoint failures). */
export async function openBlobStore(
  config: Pick<Config, 's3' | 'dataDir'>,
  logger?: Logger,
): Promise<BlobStore> {
  if (config.s3) {
    const store = new S3BlobStore(config.s3);
    await store.ensureBucket();
    return new InstrumentedBlobStore(store);
  }
  return new InstrumentedBlobStore(new FsBlobStore(path.join(config.dataDir, 'files'), { logger }));
}
