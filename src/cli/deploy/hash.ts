import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
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
/** How many refused paths a message names (the rest are counted). */
const NAMED = 20;

export interface ManifestFile extends LocalFile {
  /** The path as the site will have it (NFC, as the server normalizes it). */
  sitePath: string;
  hash: string;
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

/** Hashes every file, a few at once; `onHashed` after each. */
export async function hashAll(
  files: (LocalFile & { sitePath: string })[],
  onHashed?: (done: number) => void,
): Promise<ManifestFile[]> {
  const out: ManifestFile[] = new Array(files.length);
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(HASH_CONCURRENCY, files.length) }, async () => {
      while (next < files.length) {
        const i = next++;
        const file = files[i]!;
        const { hash, size } = await hashFile(file.absPath);
        out[i] = { ...file, hash, size };
        onHashed?.(++done);
      }
    }),
  );
  return out;
}

function extensionOf(sitePath: string): string {
  const name = sitePath.slice(sitePath.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
}
