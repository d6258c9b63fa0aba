import { statSync, type Dirent } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { namesDatabaseFile } from '../../files/client.js';

/** The ignore file read from the root of the folder (gitignore syntax). */
export const IGNORE_FILE = '.hostplaneignore';
/** Never deployed, whatever the ignore file says (it is read after these, so `!` can re-include). */
export const DEFAULT_IGNORES = ['.git/', 'node_modules/', '.DS_Store', 'Thumbs.db', IGNORE_FILE];

export interface LocalFile {
  /** The path relative to the folder, with `/` separators (not yet normalized: see manifest.ts). */
  relPath: string;
  absPath: string;
  size: number;
}

export interface Skipped {
  relPath: string;
  reason: 'database' | 'outside' | 'special';
}

export interface Walked {
  files: LocalFile[];
  /** Files and folders left out by the default ignores or the ignore file. */
  ignored: number;
  /** Left out for a reason the user should hear about. */
  skipped: Skipped[];
}

/**
 * Lists the files of `root` to deploy. Symbolic links are followed while their target stays inside
 * the folder (a link out of it could publish anything the user can read: it is skipped and named);
 * SQLite database files are skipped (a deploy never carries them, the server keeps the site's own).
 */
export async function walk(root: string): Promise<Walked> {
  const rootReal = await realpath(root);
  const rules = await ignoreRules(rootReal);
  const out: Walked = { files: [], ignored: 0, skipped: [] };
  const inside = (real: string) => real === rootReal || real.startsWith(rootReal + path.sep);

  /** `chain`: the real paths of the folders being walked, this one included. */
  async function visit(dirAbs: string, dirRel: string, chain: Set<string>): Promise<void> {
    const entries = (await readdir(dirAbs, { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const entry of entries) {
      const relPath = dirRel ? `${dirRel}/${entry.name}` : entry.name;
      const absPath = path.join(dirAbs, entry.name);
      const kind = await kindOf(entry, absPath, inside);
      if (kind.type === 'outside' || kind.type === 'special') {
        if (!isIgnored(rules, relPath, false)) out.skipped.push({ relPath, reason: kind.type });
        continue;
      }
      if (isIgnored(rules, relPath, kind.type === 'dir')) {
        out.ignored++;
        continue;
      }
      if (namesDatabaseFile(relPath)) {
        out.skipped.push({ relPath, reason: 'database' });
        continue;
      }
      if (kind.type === 'dir') {
        // A link to a folder being walked (an ancestor) would never end: it is left out.
        if (chain.has(kind.real)) {
          out.skipped.push({ relPath, reason: 'special' });
          continue;
        }
        await visit(absPath, relPath, new Set(chain).add(kind.real));
      } else {
        out.files.push({ relPath, absPath, size: kind.size });
      }
    }
  }

  await visit(rootReal, '', new Set([rootReal]));
  return out;
}

type Kind =
  { type: 'file'; size: number } | { type: 'dir'; real: string } | { type: 'outside' } | { type: 'special' };

async function kindOf(entry: Dirent, absPath: string, inside: (real: string) => boolean): Promise<Kind> {
  if (entry.isSymbolicLink()) {
    const real = await realpath(absPath).catch(() => undefined);
    // A dangling link has nothing to deploy; one out of the folder is refused.
    if (real === undefined) return { type: 'special' };
    if (!inside(real)) return { type: 'outside' };
    const target = await stat(real);
    if (target.isDirectory()) return { type: 'dir', real };
    return target.isFile() ? { type: 'file', size: target.size } : { type: 'special' };
  }
  if (entry.isDirectory()) return { type: 'dir', real: await realpath(absPath) };
  // A regular file's size, read synchronously: one system call of a few µs, where the promise
  // costs a round trip to the thread pool (300 files one after the other: ~15 ms, more on a busy
  // machine), as hash.ts reads small files.
  if (entry.isFile()) return { type: 'file', size: statSync(absPath).size };
  return { type: 'special' };
}

async function ignoreRules(rootReal: string): Promise<Ignore> {
  const rules = ignore().add(DEFAULT_IGNORES);
  const text = await readFile(path.join(rootReal, IGNORE_FILE), 'utf8').catch(
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return '';
      throw err;
    },
  );
  return rules.add(text);
}

function isIgnored(rules: Ignore, relPath: string, dir: boolean): boolean {
  try {
    return rules.ignores(dir ? `${relPath}/` : relPath);
  } catch {
    // The package refuses names it cannot match (e.g. "..."); the path check names them.
    return false;
  }
}
