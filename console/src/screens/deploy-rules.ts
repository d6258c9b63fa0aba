/**
 * What a folder deploy from the console sends, by the rules `hostplane deploy` follows
 * (src/cli/deploy/walk.ts and hash.ts): the same files left out (`.git/`, `node_modules/`,
 * `.DS_Store`, `Thumbs.db`, the patterns of a `.hostplaneignore` at the folder's root, SQLite
 * database files) and the server's own rules checked for every file before anything is sent
 * (paths, allowed extensions, 10 MB a file, 50 MB a video, 100,000 files).
 *
 * A mirror, not an import: the CLI's code reads the disk and the server's rules live in
 * src/files beside Node-only code (node:path, mime-types), which the browser bundle cannot take.
 * Keep both in step (the console tests deploy a folder with each kind of file left out).
 */
import ignore, { type Ignore } from 'ignore';

export const IGNORE_FILE = '.hostplaneignore';
/** src/cli/deploy/walk.ts DEFAULT_IGNORES. */
export const DEFAULT_IGNORES = ['.git/', 'node_modules/', '.DS_Store', 'Thumbs.db', IGNORE_FILE];
/** src/files/file-types.ts: the spec's lists (a server may add types: see acceptedTypes). */
export const FILE_EXTENSIONS = new Set([
  'html', 'css', 'js', 'json', 'xml', 'txt',
  'jpg', 'jpeg', 'png', 'gif', 'svg', 'webp', 'ico',
  'pdf',
  'woff', 'woff2', 'ttf', 'otf',
]); // prettier-ignore
export const VIDEO_EXTENSIONS = new Set(['mp4', 'webm', 'ogg', 'mov']);
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
export const MAX_VIDEO_BYTES = 50 * 1024 * 1024;
export const MAX_DEPLOY_FILES = 100_000;
/** src/files/paths.ts. */
const MAX_PATH_BYTES = 1024;
const MAX_SEGMENT_BYTES = 255;
const MAX_PATH_SEGMENTS = 32;
const FORBIDDEN =
  // eslint-disable-next-line no-control-regex -- the control characters are what it refuses
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff\\]/;
const SQLITE_FILE = /\.(?:sqlite3?|db3?)(?:-(?:wal|shm|journal))?$/;

/** A file of the picked folder, with its path below that folder (`/` separators). */
export interface FolderFile {
  file: File;
  relative: string;
}

export interface Refused {
  path: string;
  reason: string;
}

export interface DeployPlan {
  /** What goes into the manifest: the site path (NFC) of each file. */
  files: Array<{ path: string; file: File }>;
  /** Left out by the defaults or the ignore file (counted, as the CLI does). */
  ignored: number;
  /** SQLite database files: never deployed (the site keeps its own), named so the owner knows. */
  databases: string[];
  /** Files the server would refuse, each with why: none is sent. */
  refused: Refused[];
  bytes: number;
}

const encoder = new TextEncoder();
const bytesOf = (text: string) => encoder.encode(text).length;

export const extensionOf = (path: string) => {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
};

/** src/files/paths.ts namesDatabaseFile: any segment named like an SQLite file, in any spelling. */
export const namesDatabaseFile = (path: string) =>
  path
    .toLowerCase()
    .split('/')
    .some((segment) => SQLITE_FILE.test(segment.replace(/[.\s]+$/, '')));

/** Why the server would refuse this path (src/files/paths.ts normalizeSitePath), or undefined. */
export function pathRefusal(path: string): string | undefined {
  if (FORBIDDEN.test(path))
    return 'the name has control characters, line separators, invisible format characters or backslashes';
  const segments = path.split('/');
  if (segments.length > MAX_PATH_SEGMENTS) return `more than ${MAX_PATH_SEGMENTS} folders deep`;
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') return 'an empty, "." or ".." name';
    if (segment.trim() !== segment) return 'a name that starts or ends with a space';
    if (bytesOf(segment) > MAX_SEGMENT_BYTES) return `a name longer than ${MAX_SEGMENT_BYTES} bytes`;
  }
  if (bytesOf(path) > MAX_PATH_BYTES) return `a path longer than ${MAX_PATH_BYTES} bytes`;
  return undefined;
}

/** The rules of `.hostplaneignore` (gitignore syntax) after the defaults, as the CLI reads them. */
export async function ignoreRules(files: FolderFile[]): Promise<Ignore> {
  const rules = ignore().add(DEFAULT_IGNORES);
  const own = files.find((f) => f.relative === IGNORE_FILE);
  return own ? rules.add(await own.file.text()) : rules;
}

function ignored(rules: Ignore, path: string): boolean {
  try {
    return rules.ignores(path);
  } catch {
    // The package refuses names it cannot match (e.g. "..."); the path check names them.
    return false;
  }
}

/** What a deploy of these files would send, leave out and be refused, checked all at once. */
/** The extensions a server accepts (GET /api/v1/files/types); the spec's lists by default. */
export interface AcceptedTypes {
  files: ReadonlySet<string>;
  videos: ReadonlySet<string>;
}
export const SPEC_TYPES: AcceptedTypes = { files: FILE_EXTENSIONS, videos: VIDEO_EXTENSIONS };

export function planDeploy(
  files: FolderFile[],
  rules: Ignore,
  types: AcceptedTypes = SPEC_TYPES,
): DeployPlan {
  const plan: DeployPlan = { files: [], ignored: 0, databases: [], refused: [], bytes: 0 };
  const seen = new Map<string, string>();
  for (const { file, relative } of [...files].sort((a, b) => (a.relative < b.relative ? -1 : 1))) {
    if (ignored(rules, relative)) {
      plan.ignored++;
      continue;
    }
    if (namesDatabaseFile(relative)) {
      plan.databases.push(relative);
      continue;
    }
    const refuse = (reason: string) => plan.refused.push({ path: relative, reason });
    const bad = pathRefusal(relative);
    if (bad) {
      refuse(bad);
      continue;
    }
    const path = relative.normalize('NFC');
    const ext = extensionOf(path);
    const video = types.videos.has(ext);
    if (!video && !types.files.has(ext)) {
      refuse(ext ? `.${ext} files are not served by Hostplane` : 'a file needs an extension');
      continue;
    }
    const max = video ? MAX_VIDEO_BYTES : MAX_FILE_BYTES;
    if (file.size > max) {
      refuse(
        `${formatMb(file.size)}, over the ${max / 1024 / 1024} MB limit of ${video ? 'a video' : 'a file'}`,
      );
      continue;
    }
    const twin = seen.get(path);
    if (twin !== undefined) {
      refuse(`the same site path as ${twin} once normalized to Unicode NFC`);
      continue;
    }
    seen.set(path, relative);
    plan.files.push({ path, file });
    plan.bytes += file.size;
  }
  if (plan.files.length > MAX_DEPLOY_FILES)
    plan.refused.push({
      path: '.',
      reason: `${plan.files.length} files: a deploy holds at most ${MAX_DEPLOY_FILES}`,
    });
  return plan;
}

const formatMb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/**
 * The picked files as one folder: the name of the folder they all sit in and their paths below
 * it, or undefined when they do not share one (loose files, several folders).
 */
export function asOneFolder(picked: FolderFile[]): { name: string; files: FolderFile[] } | undefined {
  let name: string | undefined;
  const files: FolderFile[] = [];
  for (const p of picked) {
    const slash = p.relative.indexOf('/');
    if (slash <= 0) return undefined;
    const top = p.relative.slice(0, slash);
    if (name !== undefined && top !== name) return undefined;
    name = top;
    files.push({ file: p.file, relative: p.relative.slice(slash + 1) });
  }
  return name === undefined ? undefined : { name, files };
}

/**
 * Where the site's index page is: `root` when the folder has index.html at its root; else, when
 * exactly one top-level folder holds an index.html (a build folder picked one level too high, say
 * `project/dist/`), that folder as `nested`.
 */
export function indexOf(files: FolderFile[]): { root: boolean; nested?: string } {
  if (files.some((f) => f.relative === 'index.html')) return { root: true };
  const tops = new Set(files.filter((f) => f.relative.includes('/')).map((f) => f.relative.split('/')[0]!));
  const holding = [...tops].filter((top) => files.some((f) => f.relative === `${top}/index.html`));
  return holding.length === 1 ? { root: false, nested: holding[0] } : { root: false };
}

/** The files below one of the folder's top-level folders, relative to it. */
export const below = (files: FolderFile[], top: string): FolderFile[] =>
  files
    .filter((f) => f.relative.startsWith(`${top}/`))
    .map((f) => ({ file: f.file, relative: f.relative.slice(top.length + 1) }));
