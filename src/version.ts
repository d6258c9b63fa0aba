import { readFileSync } from 'node:fs';

/** The version in package.json (dist/src/version.js → the package root; src/ when run from source). */
export function packageVersion(): string {
  for (const rel of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'hostplane' && pkg.version) return pkg.version;
    } catch {
      // Not this level; try the next.
    }
  }
  return 'unknown';
}
