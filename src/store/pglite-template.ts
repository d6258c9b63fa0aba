import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { unpackTar } from './tar.js';

/**
 * A packed PGlite data folder, initialised and migrated once at build time
 * (./pglite-template-build.ts, run by `scripts/copy-assets.mjs`). PGlite runs initdb in WebAssembly on a new folder, which takes
 * about 6 s; unpacking this takes a few hundred ms. The template is a cleanly shut-down cluster, so
 * the first open needs no recovery. Without a template (a plain `tsc` build) PGlite's initdb runs.
 */
export const templateFile = fileURLToPath(new URL('./pglite-template.tar.gz', import.meta.url));
/** The manifest sits beside the template: `<name>.json` for `<name>.tar.gz`. */
export const manifestOf = (template: string) => template.replace(/\.tar\.gz$/, '.json');

export interface TemplateManifest {
  /** The PGlite version that wrote the folder: another one may not read it (the PG catalog version). */
  pglite: string;
  /** The newest migration applied in it; newer ones are applied at start like on any database. */
  migration: string;
}

/** The installed @electric-sql/pglite version (its package.json is not exported, so read beside it). */
export function pgliteVersion(): string {
  const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
  let dir = path.dirname(entry);
  while (!existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

function usableTemplate(template: string): boolean {
  if (!existsSync(template) || !existsSync(manifestOf(template))) return false;
  try {
    const manifest = JSON.parse(readFileSync(manifestOf(template), 'utf8')) as Partial<TemplateManifest>;
    return manifest.pglite === pgliteVersion();
  } catch {
    return false;
  }
}

const isNew = (dir: string): boolean => {
  try {
    return readdirSync(dir).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
};

/**
 * Fills a new (missing or empty) PGlite folder from the template. Returns false, leaving the folder
 * to PGlite's initdb, when there is no usable template. The caller holds the folder's lock.
 */
export async function seedFromTemplate(dir: string, template = templateFile): Promise<boolean> {
  const target = path.resolve(dir);
  if (!isNew(target) || !usableTemplate(template)) return false;
  // Unpacked beside the target and renamed into place: a crash halfway leaves no half-made
  // folder that PGlite would take for a database.
  const staging = `${target}.seed-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  try {
    await unpackTar(gunzipSync(await readFile(template)), staging);
    await rmdir(target).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    await rename(staging, target);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return true;
}
