import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { MAX_BULK_BYTES, MAX_BULK_PARTS } from '../../files/client.js';
import type { MultipartBody } from './api.js';
import type { ManifestFile } from './hash.js';

/*
 * Buckets of small files for the bulk upload (POST /api/v1/deploys/{id}/files), the way
 * `wrangler pages deploy` uploads: one request per bucket instead of one per file. Files over
 * BULK_FILE_MAX_BYTES go alone by PUT, streamed from disk.
 */

/** Files up to this size go in buckets; larger ones by their own PUT, streamed. */
export const BULK_FILE_MAX_BYTES = 1024 * 1024;
/**
 * Bytes of file content per bucket: well under the server's MAX_BULK_BYTES, so that a bucket
 * costs little of the site's share of the upload byte budget (about twice its size) and a few go
 * in side by side.
 */
export const BUCKET_BYTES = Math.min(8 * 1024 * 1024, MAX_BULK_BYTES / 4);
/** Files per bucket: the server's limit. */
export const BUCKET_FILES = MAX_BULK_PARTS;

/** Splits files into buckets, each within BUCKET_FILES and BUCKET_BYTES (a file over it alone). */
export function bucketsOf(files: ManifestFile[]): ManifestFile[][] {
  const buckets: ManifestFile[][] = [];
  let bucket: ManifestFile[] = [];
  let bytes = 0;
  for (const file of files) {
    if (bucket.length > 0 && (bucket.length >= BUCKET_FILES || bytes + file.size > BUCKET_BYTES)) {
      buckets.push(bucket);
      bucket = [];
      bytes = 0;
    }
    bucket.push(file);
    bytes += file.size;
  }
  if (bucket.length > 0) buckets.push(bucket);
  return buckets;
}

/** The bucket's multipart body: one file part per file, named by its hash (the bytes hashed, or read now). */
export async function multipartOf(files: ManifestFile[]): Promise<MultipartBody> {
  const boundary = `hostplane-${randomBytes(12).toString('hex')}`;
  const pieces: Buffer[] = [];
  for (const file of files) {
    pieces.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.hash}"; filename="${file.hash}"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      ),
      file.bytes ?? (await readFile(file.absPath)),
      Buffer.from('\r\n'),
    );
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { multipart: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}
