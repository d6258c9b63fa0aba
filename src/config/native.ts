import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../errors/index.js';

/**
 * Where native/build.sh put the custom better-sqlite3 binding (with the progress callback) and the
 * guard extension, which the SQLite engine and the data dir's lock (store/) load:
 * `<repository root>/native/build`, found from this file whether it runs from src/ (tests) or
 * dist/src/ (built), or HOSTPLANE_SQLITE_NATIVE_DIR when set (an image that keeps them elsewhere).
 */
export interface NativeParts {
  binding: string;
  guard: string;
}

export function locateNativeParts(env: NodeJS.ProcessEnv = process.env): NativeParts {
  const dir = env.HOSTPLANE_SQLITE_NATIVE_DIR ?? findBuildDir();
  const parts = { binding: path.join(dir, 'better_sqlite3.node'), guard: path.join(dir, 'sqlite-guard.so') };
  for (const file of [parts.binding, parts.guard]) {
    if (!existsSync(file)) throw new AppError('NATIVE_BUILD_MISSING', { file });
  }
  return parts;
}

// The first folder up from this file with native/sqlite-guard/ (a checkout) or native/build/ (an
// image, which ships the build without its sources), so the working directory does not matter.
function findBuildDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const native = path.join(dir, 'native');
    if (existsSync(path.join(native, 'sqlite-guard')) || existsSync(path.join(native, 'build'))) {
      return path.join(native, 'build');
    }
    const parent = path.dirname(dir);
    if (parent === dir) return path.resolve('native', 'build');
    dir = parent;
  }
}
