import { isCompressible } from './compression.js';
import { isFingerprinted } from './paths.js';

// What the edge knows about one path of a site, with every header that does not depend on the
// request computed once, when the entry is cached, not per request.

/** HTML and any path whose content can change: browsers and CDNs revalidate (cheap: ETag/304). */
export const REVALIDATE = 'public, max-age=0, must-revalidate';
/** A fingerprinted path (its name carries its content hash) never changes: keep it a year. */
export const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The 404 page may change at any time and has no validator. */
export const NO_CACHE = 'no-cache';

export interface FileEntry {
  kind: 'file';
  /** sha256 hex of the bytes: the blob key and the strong ETag. */
  hash: string;
  size: number;
  contentType: string;
  etag: string;
  /** Seconds precision, as HTTP dates have. */
  lastModifiedMs: number;
  /** Held in memory (else streamed from the blob store each time). */
  inMemory: boolean;
  /** Offered gzip/brotli compressed to clients that accept it. */
  compressible: boolean;
  /** Headers of a 200, 206 or 304 answer that do not depend on the request (flat name, value list). */
  headers: readonly string[];
  /** Headers when the file is a site's 404 page. */
  notFoundHeaders: readonly string[];
}

export type PathEntry = FileEntry | { kind: 'folder' } | { kind: 'missing' };

export const MISSING: PathEntry = { kind: 'missing' };
export const FOLDER: PathEntry = { kind: 'folder' };

/** Cache-Control by kind of file: HTML always revalidates; fingerprinted assets are immutable. */
export function cacheControlFor(sitePath: string, contentType: string): string {
  if (contentType.startsWith('text/html')) return REVALIDATE;
  return isFingerprinted(sitePath) ? IMMUTABLE : REVALIDATE;
}

export function fileEntry(
  row: { path: string; blobKey: string | null; size: number; contentType: string | null; updatedAt: Date },
  options: { maxInMemoryBytes: number; compression: boolean },
): FileEntry {
  const hash = row.blobKey ?? '';
  const contentType = row.contentType ?? 'application/octet-stream';
  const inMemory = row.size <= options.maxInMemoryBytes;
  const compressible = options.compression && inMemory && isCompressible(contentType, row.size);
  const lastModifiedMs = Math.floor(row.updatedAt.getTime() / 1000) * 1000;
  const common = ['Content-Type', contentType, 'X-Content-Type-Options', 'nosniff'];
  return {
    kind: 'file',
    hash,
    size: row.size,
    contentType,
    etag: `"${hash}"`,
    lastModifiedMs,
    inMemory,
    compressible,
    headers: [
      ...common,
      'Cache-Control',
      cacheControlFor(row.path, contentType),
      'Last-Modified',
      new Date(lastModifiedMs).toUTCString(),
      'Accept-Ranges',
      'bytes',
      // Only where the answer differs by Accept-Encoding: shared caches then keep one copy per encoding.
      ...(compressible ? ['Vary', 'Accept-Encoding'] : []),
    ],
    notFoundHeaders: [...common, 'Cache-Control', NO_CACHE],
  };
}

/** The ETag of a representation: the identity bytes, or a compressed variant of them. */
export const variantEtag = (hash: string, encoding: string | undefined) =>
  encoding ? `"${hash}-${encoding === 'gzip' ? 'gz' : encoding}"` : `"${hash}"`;

/**
 * Does If-None-Match name this file, in any representation? (`*`, a list, weak or strong tags:
 * the weak comparison RFC 9110 asks for.)
 */
export function etagMatches(ifNoneMatch: string, hash: string): boolean {
  const trimmed = ifNoneMatch.trim();
  if (trimmed === '*') return true;
  if (!trimmed.includes(hash)) return false;
  for (const candidate of trimmed.split(',')) {
    const tag = candidate.trim().replace(/^W\//, '');
    if (tag === `"${hash}"` || tag === `"${hash}-br"` || tag === `"${hash}-gz"`) return true;
  }
  return false;
}

/** If-Modified-Since: unchanged since that date (only consulted without If-None-Match). */
export function notModifiedSince(ifModifiedSince: string, lastModifiedMs: number): boolean {
  const since = Date.parse(ifModifiedSince);
  return Number.isFinite(since) && lastModifiedMs <= since;
}

/** If-Range: a range is honoured only for the current strong ETag or exact Last-Modified date. */
export function ifRangeAllows(ifRange: string | undefined, entry: FileEntry): boolean {
  if (ifRange === undefined) return true;
  const value = ifRange.trim();
  if (value.startsWith('"')) return value === entry.etag;
  const date = Date.parse(value);
  return Number.isFinite(date) && date === entry.lastModifiedMs;
}
