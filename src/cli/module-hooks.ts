import { readFileSync } from 'node:fs';
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Start-up speed on Node 22+/24: the ESM resolver works out the format of every module it resolves
 * from the nearest package.json, and for that spreads the package's parsed config, which re-parses
 * its whole `exports` map each time. drizzle-orm ships ~400 ESM files under a 179 KB package.json,
 * so loading it took ~450 ms of JSON.parse (node 24.21, 2 cores) instead of ~35 ms.
 *
 * This resolve hook answers the common case itself: a relative `./x.js` import from a file in a
 * `"type": "module"` package is that file, as an ES module. Each package.json is read once. Every
 * other specifier (bare, `#imports`, other extensions, CommonJS packages) goes to Node as before.
 */
export function installFastRelativeResolve(): void {
  // module.registerHooks: Node >= 22.15 / 23.5 (in-thread, synchronous). Older Node: nothing to do.
  const register = (module as Partial<Pick<typeof module, 'registerHooks'>>).registerHooks;
  if (!register) return;
  register({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL;
      if (
        parent?.startsWith('file:') &&
        (specifier.startsWith('./') || specifier.startsWith('../')) &&
        specifier.endsWith('.js')
      ) {
        const url = new URL(specifier, parent);
        if (packageTypeOf(path.dirname(fileURLToPath(url))) === 'module') {
          return { url: url.href, format: 'module', shortCircuit: true };
        }
      }
      return nextResolve(specifier, context);
    },
  });
}

/**
 * Keeps V8's compiled code of the modules between runs (module.enableCompileCache, Node >= 22.1),
 * so that a short-lived command (`hostplane deploy`) does not compile its modules again each time:
 * ~30-50 ms of each run on 2 busy cores. The cache lives in the user's own cache folder,
 * $XDG_CACHE_HOME/hostplane or ~/.cache/hostplane, never in a folder other users share (the
 * default, os.tmpdir(), is one); NODE_COMPILE_CACHE and NODE_DISABLE_COMPILE_CACHE=1 are Node's
 * own switches and win. Without a home or on a read-only disk, modules compile as before.
 */
export function enableCompileCache(): void {
  const enable = (module as Partial<Pick<typeof module, 'enableCompileCache'>>).enableCompileCache;
  if (!enable || process.env.NODE_COMPILE_CACHE) return;
  try {
    const xdg = process.env.XDG_CACHE_HOME;
    const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache');
    enable(path.join(base, 'hostplane', 'node-compile-cache'));
  } catch {
    // No home folder, or none writable: nothing is cached.
  }
}

const typeByDir = new Map<string, string | undefined>();

/** The `type` of the nearest package.json, as Node reads it; undefined when unreadable (Node decides). */
function packageTypeOf(dir: string): string | undefined {
  if (typeByDir.has(dir)) return typeByDir.get(dir);
  let type: string | undefined;
  try {
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { type?: unknown };
    type = pkg.type === 'module' ? 'module' : 'commonjs';
  } catch (err) {
    const parent = path.dirname(dir);
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    type = missing && parent !== dir ? packageTypeOf(parent) : undefined;
  }
  typeByDir.set(dir, type);
  return type;
}
