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

// SQLite database files and their companions (write-ahead log, shared memory, rollback journal).
const SQLITE_FILE = /\.(?:sqlite3?|db3?)(?:-(?:wal|shm|journal))?$/;

/** Is this one segment named like an SQLite database file (any case, trailing dots and spaces ignored)? */
function isDatabaseName(segment: string): boolean {
  return SQLITE_FILE.test(segment.toLowerCase().replace(/[.\s]+$/, ''));
}

/**
 * Is a site path (or any folder on it) named like an SQLite database file? The edge never serves
 * those, whatever the spelling: case, trailing dots and spaces (which some file systems and
 * clients drop) and empty segments are ignored before matching. The files API refuses to create
 * such a path (`normalizeSitePath`), so every URL it answers with can be served.
 */
export function namesDatabaseFile(sitePath: string): boolean {
  const lower = sitePath.toLowerCase();
  // Fast path: nothing that could be an extension of the list.
  if (!lower.includes('.db') && !lower.includes('.sqlite')) return false;
  return lower.split('/').some(isDatabaseName);
}

/** What `normalizeSitePath` answers when a segment is named like a database file. */
const DATABASE_NAME_RULE =
  'must not contain a folder named like an SQLite database file (.db, .db3, .sqlite, .sqlite3, or with -wal, -shm, -journal), in any case: the site never serves such paths';

/**
 * Validates a client-supplied site path and returns its canonical form (NFC, no trailing slash).
 * Paths are relative to the site root: absolute paths, `.`/`..` segments, empty segments,
 * backslashes, control characters and unpaired surrogates are refused, so no path can leave its
 * site and every path is storable as UTF-8. A new path may not pass through a folder named like
 * an SQLite database file, nor be a folder so named (the edge never serves them); a file's own
 * name is left to the extension check (no allowed extension is a database's).
 */
export function normalizeSitePath(
  input: unknown,
  field = 'path',
  /**
   * `create`: a new file's path (or a database's: its folders are checked); `folder`: a new
   * folder's; `existing`: a path that names something already stored (get, delete, a rename's source).
   */
  purpose: 'create' | 'folder' | 'existing' = 'create',
): string {
  if (typeof input !== 'string' || input.length === 0) {
    throw invalidPath(`${field} is required and must be a non-empty string`);
  }
  if ((purpose === 'existing' ? FORBIDDEN_BEFORE : FORBIDDEN).test(input)) {
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
  if (purpose !== 'existing') {
    const checked = purpose === 'folder' ? segments : segments.slice(0, -1);
    const named = checked.find(isDatabaseName);
    if (named !== undefined) throw invalidPath(`${field} ${DATABASE_NAME_RULE} ("${named}")`);
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
