import { pipeline, Readable, Transform } from 'node:stream';
import type { Request, RequestHandler, Response } from 'express';
import client from 'prom-client';
import { AppError, isAppError } from '../errors/index.js';
import { registry as metrics, withSpan } from '../observability/index.js';
import type { Deploy, DeploysService } from './deploys.js';
import type { PartToCommit, VerifiedPart } from './deploy-bulk-commit.js';
import { bulkParts, MAX_BULK_BYTES, MAX_BULK_PARTS, readUpTo, type BulkPart } from './deploy-bulk-parts.js';
import { MAX_FILE_BYTES, type FilesService } from './service.js';
import { tooLargeFor } from './upload-rules.js';

/*
 * POST /api/v1/deploys/{id}/files: many blobs of a deploy in one multipart request, each part named
 * by its SHA-256 (the way Cloudflare Pages uploads in buckets). Parts are read in order, each hashed
 * as it streams and checked against its name; blobs up to 10 MB are held in memory and recorded in
 * groups (deploy-bulk-commit.ts: a few statements per group, not several per blob), bigger ones
 * (videos) stream to a staged object and go the single PUT's way. The first bad part ends the
 * request: the blobs before it are recorded (content-addressed: a retry sends only the rest).
 */

export { MAX_BULK_BYTES, MAX_BULK_PARTS } from './deploy-bulk-parts.js';

/** Verified small blobs are recorded once the group holds this many bytes (and at the end). */
const GROUP_BYTES = 8 * 1024 * 1024;
/** The answer's `missing` lists at most this many hashes (what one more request may carry). */
export const MISSING_LISTED = MAX_BULK_PARTS;

const SHA256 = /^[0-9a-f]{64}$/;

const bulkUploadsTotal = new client.Counter({
  name: 'hostplane_deploy_bulk_uploads_total',
  help: 'Bulk uploads of deploy blobs (POST /api/v1/deploys/{id}/files), by outcome (ok, refused).',
  labelNames: ['outcome'] as const,
  registers: [metrics],
});
const bulkPartsTotal = new client.Counter({
  name: 'hostplane_deploy_bulk_parts_total',
  help: 'Parts of bulk uploads, by result: received (stored), already_present, refused.',
  labelNames: ['result'] as const,
  registers: [metrics],
});

/**
 * What a bulk request may cost in memory: its verified group (up to GROUP_BYTES) and the part being
 * read (up to 10 MB, its chunks then their concatenation), or its body when smaller; chunked: that
 * worst case. Parts over 10 MB stream to the blob store through bounded buffers.
 */
export const BULK_HELD_BYTES = GROUP_BYTES + 2 * MAX_FILE_BYTES;
export const bulkUploadCost = (declared: number | undefined) =>
  declared === undefined ? BULK_HELD_BYTES : Math.min(2 * declared, BULK_HELD_BYTES);

/** Refusals decided from the headers alone, before the body is admitted or read. */
export const bulkPrecheck: RequestHandler = (req, _res, next) => {
  const length = Number(req.headers['content-length'] ?? 0);
  if (length > MAX_BULK_BYTES) return next(new AppError('PAYLOAD_TOO_LARGE'));
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity')
    return next(
      new AppError('UNSUPPORTED_MEDIA_TYPE', { message: 'Send the bytes as they are (no Content-Encoding)' }),
    );
  if (!req.is('multipart/form-data'))
    return next(
      new AppError('UNSUPPORTED_MEDIA_TYPE', {
        message:
          'Send the blobs as multipart/form-data, one part per blob whose field name is its SHA-256 (lower-case hex).',
      }),
    );
  next();
};

export interface BulkResult {
  received: number;
  already_present: number;
  missing: string[];
  state: string;
  remaining: number;
}

/** Reads and records the parts of a bulk upload (the route checked the deploy's state). */
export function receiveBulk(
  req: Request,
  res: Response,
  deploy: Deploy,
  deploys: DeploysService,
  files: FilesService,
): Promise<BulkResult> {
  return withSpan('deploy.bulk_upload', { 'hostplane.deploy_id': deploy.id }, async () => {
    try {
      const result = await receive(req, res, deploy, deploys, files);
      bulkUploadsTotal.inc({ outcome: 'ok' });
      return result;
    } catch (err) {
      bulkUploadsTotal.inc({ outcome: 'refused' });
      throw err;
    }
  });
}

async function receive(
  req: Request,
  res: Response,
  deploy: Deploy,
  deploys: DeploysService,
  files: FilesService,
): Promise<BulkResult> {
  const parts = bulkParts(req, res);
  const received: string[] = [];
  const seen = new Set<string>();
  let already = 0;
  let group: VerifiedPart[] = [];
  let groupBytes = 0;
  let count = 0;

  /** A refusal of one part: the blobs before it are recorded first, and the message says so. */
  const refuse = async (err: unknown): Promise<never> => {
    parts.abandon();
    await flush();
    bulkPartsTotal.inc({ result: 'refused' });
    if (isAppError(err, 'HASH_MISMATCH')) throw new AppError('HASH_MISMATCH', { ...err.params, received });
    throw err;
  };
  const flush = async () => {
    const batch = group;
    group = [];
    groupBytes = 0;
    if (batch.length === 0) return;
    const { info, pending } = await deploys.hashInfo(
      deploy,
      batch.map((p) => p.hash),
    );
    const commit: PartToCommit[] = [];
    let refusal: unknown;
    for (const part of batch) {
      const known = info.get(part.hash);
      if (!known) {
        refusal = notInManifest(deploy, part.hash, received.length + commit.length);
        break;
      }
      if (part.bytes.length > known.limit) {
        refusal = tooLargeFor(known.narrowest);
        break;
      }
      if (known.uploaded) already++;
      else
        commit.push({
          ...part,
          missingPaths: known.missingPaths,
          generation: known.generation,
          claimed: known.claimed,
        });
    }
    const done = await deploys.commitParts(deploy, commit, pending);
    received.push(...done.recorded);
    bulkPartsTotal.inc({ result: 'received' }, done.recorded.length);
    refusal ??= done.refusal;
    if (refusal !== undefined) {
      parts.abandon();
      bulkPartsTotal.inc({ result: 'refused' });
      throw refusal;
    }
  };

  const nextPart = () => parts.next().catch(refuse);
  for (let part = await nextPart(); part !== undefined; part = await nextPart()) {
    count++;
    const hash = part.name;
    if (!SHA256.test(hash)) {
      part.stream.resume();
      await refuse(
        new AppError('INVALID_REQUEST', {
          message: `Part ${count} is named "${hash.slice(0, 70)}": name each part by the SHA-256 of its bytes (64 lower-case hex characters).${storedNote(received.length + group.length)}`,
        }),
      );
    }
    let read;
    try {
      read = await readUpTo(part.stream, MAX_FILE_BYTES);
    } catch {
      await refuse(parts.failure() ?? malformedPart());
    }
    read = read!;
    if (!read.ended) {
      // Over 10 MB: only a blob every path of which is a video may be that big, staged as the PUT does.
      await flush();
      const big = await receiveBig(deploy, deploys, files, part, read.chunks).catch(refuse);
      if (big === 'present') already++;
      else received.push(hash);
      seen.add(hash);
      continue;
    }
    if (read.hash !== hash)
      await refuse(new AppError('HASH_MISMATCH', { expected: hash, actual: read.hash! }));
    if (seen.has(hash)) {
      already++; // a duplicate part: verified, not stored twice
      continue;
    }
    seen.add(hash);
    const bytes = read.chunks.length === 1 ? read.chunks[0]! : Buffer.concat(read.chunks);
    group.push({ hash, bytes });
    groupBytes += bytes.length;
    if (groupBytes >= GROUP_BYTES) await flush();
  }
  if (count === 0)
    throw new AppError('INVALID_REQUEST', {
      message: 'The body has no part: send each blob as a part named by its SHA-256.',
    });
  await flush();
  bulkPartsTotal.inc({ result: 'already_present' }, already);
  const left = await deploys.missingHashes(deploy, MISSING_LISTED);
  return { received: received.length, already_present: already, ...left };
}

const storedNote = (n: number) =>
  n === 0
    ? ''
    : ` The ${n} blob${n === 1 ? '' : 's'} before it in this request ${n === 1 ? 'was' : 'were'} stored.`;

const notInManifest = (deploy: Deploy, hash: string, before: number) =>
  new AppError('INVALID_REQUEST', {
    message: `No file of deploy ${deploy.id} has the hash ${hash}: send only hashes of its manifest.${storedNote(before)}`,
  });

const malformedPart = () =>
  new AppError('INVALID_REQUEST', { message: 'Malformed multipart/form-data request.' });

/** A part over 10 MB: staged in the blob store, checked, recorded like a single PUT's. */
async function receiveBig(
  deploy: Deploy,
  deploys: DeploysService,
  files: FilesService,
  part: BulkPart,
  head: Buffer[],
): Promise<'stored' | 'present'> {
  const hash = part.name;
  const { limit, narrowest, uploaded } = await deploys.blobLimit(deploy, hash).catch((err: unknown) => {
    throw isAppError(err, 'NOT_FOUND') ? notInManifest(deploy, hash, 0) : err;
  });
  if (limit <= MAX_FILE_BYTES) throw tooLargeFor(narrowest);
  let seen = 0;
  const cut = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      done(seen > limit ? tooLargeFor(narrowest) : null, chunk);
    },
  });
  async function* body() {
    yield* head;
    for await (const chunk of part.stream) yield chunk as Buffer;
  }
  // pipeline: an error of the part (a body cut short) reaches the staging write, which then fails.
  const staged = await files.stage(pipeline(Readable.from(body()), cut, () => undefined));
  try {
    if (staged.hash !== hash) throw new AppError('HASH_MISMATCH', { expected: hash, actual: staged.hash });
    if (uploaded !== null) return 'present';
    await deploys.commitBlob(deploy, hash, staged.size, () => deploys.copyBlob(staged.tmpKey, hash));
    return 'stored';
  } finally {
    await files.discardStaged(staged).catch(() => undefined);
  }
}
