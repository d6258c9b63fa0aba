import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { isAppError, AppError } from '../../errors/index.js';
import {
  MAX_DEPLOY_FILES,
  MAX_FILE_BYTES,
  MAX_VIDEO_BYTES,
  normalizeSitePath,
  specFileTypes,
  type FileTypes,
} from '../../files/client.js';
import { ApiRefused } from '../errors.js';
import type { DeployApi } from './api.js';
import type { LocalFile } from './walk.js';

const HASH_CONCURRENCY = 8;
/** Files up to this size are read whole (see hashAll): the bulk upload's largest (bulk.ts). */
const READ_WHOLE_MAX_BYTES = 1024 * 1024;
/** The bytes of small files kept from the hash to the upload, at most. */
const KEEP_BYTES = 64 * 1024 * 1024;
/** How many refused paths a message names (the rest are counted). */
const NAMED = 20;

export interface ManifestFile extends LocalFile {
  /** The path as the site will have it (NFC, as the server normalizes it). */
  sitePath: string;
  hash: string;
  /** The bytes that were hashed, kept for the upload (small files, see hashAll). */
  bytes?: Buffer;
}

/** A file the server would refuse, and why (refused here, before anything is sent). */
export interface Refusal {
  relPath: string;
  reason: string;
  /** A size over the plan-independent limits (exit code: a limit) rather than a path rule. */
  limit: boolean;
  /** An extension the server does not accept. */
  type?: boolean;
}

/** The extensions a server accepts: files (10 MB) and videos (50 MB). */
export type AllowedTypes = Pick<FileTypes, 'upload' | 'video'>;

/**
 * The server's file types (GET /api/v1/files/types: the spec's list and what its operator added);
 * a server older than that route answers 404, and has the spec's list.
 */
export async function serverFileTypes(api: DeployApi): Promise<AllowedTypes> {
  try {
    const { body } = await api.get<{ file_extensions: string[]; video_extensions: string[] }>(
      '/api/v1/files/types',
    );
    return { upload: new Set(body.file_extensions), video: new Set(body.video_extensions) };
  } catch (err) {
    if (err instanceof ApiRefused && err.status === 404) return specFileTypes;
    throw err;
  }
}

/** The server's rules for a manifest's paths and blob sizes, checked for every file at once. */
export function checkFiles(
  files: LocalFile[],
  types: AllowedTypes = specFileTypes,
): {
  ok: (LocalFile & { sitePath: string })[];
  refused: Refusal[];
} {
  const ok: (LocalFile & { sitePath: string })[] = [];
  const refused: Refusal[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    let sitePath: string;
    try {
      sitePath = normalizeSitePath(file.relPath, 'the path');
    } catch (err) {
      if (!isAppError(err)) throw err;
      refused.push({ relPath: file.relPath, reason: err.message, limit: false });
      continue;
    }
    const ext = extensionOf(sitePath);
    const video = types.video.has(ext);
    if (!video && !types.upload.has(ext)) {
      refused.push({
        relPath: file.relPath,
        reason: ext ? `.${ext} files are not served by Hostplane` : 'a file needs an extension',
        limit: false,
        type: !!ext,
      });
      continue;
    }
    const max = video ? MAX_VIDEO_BYTES : MAX_FILE_BYTES;
    if (file.size > max) {
      refused.push({
        relPath: file.relPath,
        reason: `${file.size} bytes, over the ${max / 1024 / 1024} MB limit of ${video ? 'a video' : 'a file'}`,
        limit: true,
      });
      continue;
    }
    const twin = seen.get(sitePath);
    if (twin !== undefined) {
      refused.push({
        relPath: file.relPath,
        reason: `the same site path as ${twin} once normalized to Unicode NFC`,
        limit: false,
      });
      continue;
    }
    seen.set(sitePath, file.relPath);
    ok.push({ ...file, sitePath });
  }
  if (ok.length > MAX_DEPLOY_FILES)
    refused.push({
      relPath: '.',
      reason: `${ok.length} files: a deploy holds at most ${MAX_DEPLOY_FILES}`,
      limit: true,
    });
  return { ok, refused };
}

/** One message naming the refused files (the first NAMED) and what to do about them. */
export function refusalError(refused: Refusal[]): AppError {
  const lines = refused.slice(0, NAMED).map((r) => `  ${r.relPath}: ${r.reason}`);
  if (refused.length > NAMED) lines.push(`  … and ${refused.length - NAMED} more`);
  return new AppError('INVALID_PATH', {
    message:
      `${refused.length} file${refused.length === 1 ? '' : 's'} cannot be deployed; nothing was sent:\n${lines.join('\n')}\n` +
      'List what should stay local in .hostplaneignore (gitignore syntax) at the root of the folder.' +
      (refused.some((r) => r.type)
        ? '\nMore file types (map, mjs, webmanifest, wasm…) are the server operator’s choice: HOSTPLANE_EXTRA_FILE_TYPES.'
        : ''),
  });
}

/** SHA-256 of a file, read as a stream; the size is the bytes actually read. */
export function hashFile(absPath: string): Promise<{ hash: string; size: number }> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let size = 0;
    createReadStream(absPath)
      .on('data', (chunk) => {
        size += chunk.length;
        hash.update(chunk);
      })
      .on('error', reject)
      .on('end', () => resolve({ hash: hash.digest('hex'), size }));
  });
}

/** A file's SHA-256 and size, with its bytes when they were kept for the upload. */
export interface Hashed {
  hash: string;
  size: number;
  bytes?: Buffer;
}

/**
 * Hashes the small files (up to READ_WHOLE_MAX_BYTES, what goes in a bulk bucket) by absolute
 * path, read whole and synchronously: a 1 KB file costs a few µs that way, where a stream or
 * readFile costs several thread-pool round trips (300 files: ~40 ms by stream, ~3 ms so). Their
 * bytes are kept for the upload while the kept total stays within `keepBytes`, so that what is sent
 * is what was hashed, read once. The event loop gets a turn every few ms: requests in flight go on
 * meanwhile (deploy.ts runs this while the key is checked).
 */
export async function hashSmall(files: LocalFile[], keepBytes = KEEP_BYTES): Promise<Map<string, Hashed>> {
  const out = new Map<string, Hashed>();
  let kept = 0;
  const breathe = breather();
  for (const file of files) {
    if (file.size > READ_WHOLE_MAX_BYTES || out.has(file.absPath)) continue;
    const bytes = readFileSync(file.absPath);
    const keep = kept + bytes.length <= keepBytes;
    if (keep) kept += bytes.length;
    const hash = createHash('sha256').update(bytes).digest('hex');
    out.set(file.absPath, { hash, size: bytes.length, ...(keep ? { bytes } : {}) });
    await breathe();
  }
  return out;
}

/**
 * Hashes every file: those of `ahead` (hashSmall's answer) as they were, the other small ones the
 * same way, larger ones streamed a few at once.
 */
export async function hashAll(
  files: (LocalFile & { sitePath: string })[],
  ahead?: Map<string, Hashed>,
): Promise<ManifestFile[]> {
  let keptAhead = 0;
  for (const h of ahead?.values() ?? []) keptAhead += h.bytes?.length ?? 0;
  const known = ahead ?? new Map<string, Hashed>();
  const rest = files.filter((f) => !known.has(f.absPath));
  const small = await hashSmall(rest, Math.max(0, KEEP_BYTES - keptAhead));
  const large = rest.filter((f) => !small.has(f.absPath));
  const streamed = new Map<string, Hashed>();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(HASH_CONCURRENCY, large.length) }, async () => {
      while (next < large.length) {
        const file = large[next++]!;
        streamed.set(file.absPath, await hashFile(file.absPath));
      }
    }),
  );
  return files.map((file) => ({
    ...file,
    ...(known.get(file.absPath) ?? small.get(file.absPath) ?? streamed.get(file.absPath)!),
  }));
}

/** Every call after `everyMs` of synchronous work since the last turn yields one to the event loop. */
export function breather(everyMs = 5): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < everyMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    since = performance.now();
  };
}

function extensionOf(sitePath: string): string {
  const name = sitePath.slice(sitePath.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
}
