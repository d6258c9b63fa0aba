import path from 'node:path';
import { AppError } from '../errors/index.js';

const invalidPath = (message: string) => new AppError('INVALID_PATH', { message });

export const MAX_PATH_BYTES = 1024;
export const MAX_SEGMENT_BYTES = 255;
/** Folder nesting depth: deep enough for any real site, shallow enough to bound per-path work. */
export const MAX_PATH_SEGMENTS = 32;

/**
 * Characters that never belong in a site path: C0 and C1 controls (NUL, U+0085 …), DEL, Unicode
 * line and paragraph separators, invisible format controls that make two paths look alike
 * (bidirectional overrides, zero-width space, word joiner, BOM), and backslashes. One source for
 * the check and for the `pattern` in the OpenAPI document.
 */
export const FORBIDDEN_PATH_CHARS =
  '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060\\u2066-\\u2069\\ufeff\\\\';
const FORBIDDEN = new RegExp(`[${FORBIDDEN_PATH_CHARS}]`);
// The rule before the Unicode controls were added: paths of files stored under it must stay
// reachable (to read, rename and delete them), so it is all that is asked of an existing path.
// eslint-disable-next-line no-control-regex
const FORBIDDEN_BEFORE = /[\u0000-\u001f\u007f\\]/;
// A lone UTF-16 surrogate is not Unicode text: it cannot be stored or served as UTF-8.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Validates a client-supplied site path and returns its canonical form (NFC, no trailing slash).
 * Paths are relative to the site root: absolute paths, `.`/`..` segments, empty segments,
 * backslashes, control characters and unpaired surrogates are refused, so no path can leave its
 * site and every path is storable as UTF-8.
 */
export function normalizeSitePath(
  input: unknown,
  field = 'path',
  /** `existing`: a path that names something already stored (get, delete, a rename's source). */
  purpose: 'create' | 'existing' = 'create',
): string {
  if (typeof input !== 'string' || input.length === 0) {
    throw invalidPath(`${field} is required and must be a non-empty string`);
  }
  if ((purpose === 'create' ? FORBIDDEN : FORBIDDEN_BEFORE).test(input)) {
    throw invalidPath(
      `${field} must not contain control characters, line separators, invisible format characters or backslashes`,
    );
  }
  if (LONE_SURROGATE.test(input)) {
    throw invalidPath(`${field} must be valid Unicode text (it has an unpaired surrogate)`);
  }
  if (input.startsWith('/')) {
    throw invalidPath(`${field} must be relative to the site root (no leading "/")`);
  }
  const trimmed = input.endsWith('/') ? input.slice(0, -1) : input;
  const normalized = trimmed.normalize('NFC');
  const segments = normalized.split('/');
  if (segments.length > MAX_PATH_SEGMENTS) {
    throw invalidPath(`${field} may have at most ${MAX_PATH_SEGMENTS} segments`);
  }
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw invalidPath(`${field} must not contain empty, "." or ".." segments`);
    }
    if (segment.trim() !== segment) {
      throw invalidPath(`${field} segments must not start or end with whitespace`);
    }
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
      throw invalidPath(`each segment of ${field} must be at most ${MAX_SEGMENT_BYTES} bytes`);
    }
  }
  if (Buffer.byteLength(normalized) > MAX_PATH_BYTES) {
    throw invalidPath(`${field} must be at most ${MAX_PATH_BYTES} bytes`);
  }
  return normalized;
}

export interface PathParts {
  name: string;
  parent: string | null;
  depth: number;
}

export function pathParts(sitePath: string): PathParts {
  const segments = sitePath.split('/');
  return {
    name: segments[segments.length - 1] ?? sitePath,
    parent: segments.length > 1 ? segments.slice(0, -1).join('/') : null,
    depth: segments.length - 1,
  };
}

/** Every ancestor folder of a path, outermost first: `a/b/c.html` → `a`, `a/b`. */
export function ancestors(sitePath: string): string[] {
  const segments = sitePath.split('/');
  return segments.slice(0, -1).map((_, i) => segments.slice(0, i + 1).join('/'));
}

/** The lower-cased extension without the dot, or '' when there is none. */
export function extensionOf(sitePath: string): string {
  const ext = path.posix.extname(sitePath);
  return ext ? ext.slice(1).toLowerCase() : '';
}
