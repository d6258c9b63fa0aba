import {
  BucketAlreadyExists,
  BucketAlreadyOwnedByYou,
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import type { BlobListing, BlobObject, BlobStore, ByteRange } from './blob-store.js';

export interface S3BlobStoreOptions {
  bucket: string;
  region: string;
  endpoint?: string | undefined;
  forcePathStyle?: boolean;
  /** Explicit credentials (tests); otherwise the AWS SDK's default provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

const isMissing = (err: unknown): boolean =>
  err instanceof NoSuchKey ||
  err instanceof NotFound ||
  (err instanceof S3ServiceException && err.$metadata.httpStatusCode === 404);

const isAlreadyThere = (err: unknown): boolean =>
  err instanceof BucketAlreadyOwnedByYou ||
  err instanceof BucketAlreadyExists ||
  (err instanceof S3ServiceException &&
    (err.name === 'BucketAlreadyOwnedByYou' || err.name === 'BucketAlreadyExists'));

/** Blob store on any S3 API (AWS, MinIO, R2). */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly client: S3Client;
  private readonly bucket: string;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.client = new S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle ?? false,
      credentials: options.credentials,
      // A try against an endpoint that does not answer is bounded (start-up retries, requests
      // answer 503); a slow transfer once connected is not cut.
      requestHandler: { connectionTimeout: 5_000 },
    });
  }

  /** Creates the bucket when it does not exist (for embedded MinIO and first runs). */
  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      if (!isMissing(err)) throw err;
      try {
        await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }));
      } catch (createErr) {
        // Another replica created it between our look and our create (two starting on a fresh
        // bucket): ours now, or it exists and we can reach it, is all we asked for.
        if (!isAlreadyThere(createErr)) throw createErr;
        await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
      }
    }
  }

  async put(key: string, body: Buffer): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body }));
  }

  async putStream(key: string, body: Readable): Promise<number> {
    let size = 0;
    body.on('data', (chunk: Buffer) => (size += chunk.length));
    // Multipart upload in 8 MiB parts: memory stays bounded whatever the object's size.
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body },
      partSize: 8 * 1024 * 1024,
      queueSize: 2,
    });
    await upload.done();
    return size;
  }

  async get(key: string, range?: ByteRange): Promise<BlobObject | undefined> {
    try {
      const out = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
      const size = range
        ? Number(out.ContentRange?.split('/')[1] ?? out.ContentLength ?? 0)
        : Number(out.ContentLength ?? 0);
      return { body: out.Body as Readable, size };
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async getBuffer(key: string): Promise<Buffer | undefined> {
    const obj = await this.get(key);
    if (!obj) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of obj.body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: Number(out.ContentLength ?? 0) };
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async move(from: string, to: string): Promise<void> {
    // Onto itself: nothing to do (the copy and the delete of the source would remove it).
    if (from === to) return;
    await this.copy(from, to);
    await this.delete(from);
  }

  async copy(from: string, to: string): Promise<void> {
    await this.client.send(
      new CopyObjectCommand({
        Bucket: this.bucket,
        Key: to,
        CopySource: `${this.bucket}/${from.split('/').map(encodeURIComponent).join('/')}`,
      }),
    );
  }

  async delete(key: string, signal?: AbortSignal): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), {
      abortSignal: signal,
    });
  }

  async *list(prefix: string): AsyncIterable<BlobListing> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const item of page.Contents ?? []) {
        if (item.Key) {
          yield {
            key: item.Key,
            size: Number(item.Size ?? 0),
            lastModified: item.LastModified ?? new Date(0),
          };
        }
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }
}
