import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import { packTar, unpackTar } from './tar.js';

/**
 * A packed PGlite data folder, initialised and migrated once at build time
 * (`scripts/copy-assets.mjs`). PGlite runs initdb in WebAssembly on a new folder, which takes
 * about 6 s; unpacking this takes a few hundred ms. The template is a cleanly shut-down cluster, so
 * the first open needs no recovery. Without a template (a plain `tsc` build) PGlite's initdb runs.
 */
export const templateFile = fileURLToPath(new URL('./pglite-template.tar.gz', import.meta.url));
/** The manifest sits beside the template: `<name>.json` for `<name>.tar.gz`. */
const manifestOf = (template: string) => template.replace(/\.tar\.gz$/, '.json');

interface Manifest {
  /** The PGlite version that wrote the folder: another one may not read it (the PG catalog version). */
  pglite: string;
  /** The newest migration applied in it; newer ones are applied at start like on any database. */
  migration: string;
}

/** The installed @electric-sql/pglite version (its package.json is not exported, so read beside it). */
function pgliteVersion(): string {
  const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
  let dir = path.dirname(entry);
  while (!existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

function usableTemplate(template: string): boolean {
  if (!existsSync(template) || !existsSync(manifestOf(template))) return false;
  try {
    const manifest = JSON.parse(readFileSync(manifestOf(template), 'utf8')) as Partial<Manifest>;
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

/**
 * Writes the template: a new PGlite folder with every migration applied through the same path a
 * server takes (./schema-gate.ts), shut down cleanly, then packed. Run by the build.
 */
export async function buildTemplate(
  file = templateFile,
): Promise<{ file: string; bytes: number; migration: string }> {
  // Imported lazily: db.ts imports this module (for seedFromTemplate).
  const [{ openStore }, { migrate }] = await Promise.all([import('./db.js'), import('./migrate.js')]);
  const work = await mkdtemp(path.join(os.tmpdir(), 'hostplane-pglite-template-'));
  try {
    const dir = path.join(work, 'pglite');
    const store = await openStore({ pgliteDir: dir, pgliteTemplate: false });
    let migration: string;
    try {
      const { version } = await migrate(store);
      migration = version.newest ?? '';
    } finally {
      await store.close();
    }
    const packed = gzipSync(await packTar(dir), { level: 9 });
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, packed);
    const manifest: Manifest = { pglite: pgliteVersion(), migration };
    await writeFile(manifestOf(file), `${JSON.stringify(manifest, null, 2)}\n`);
    return { file, bytes: packed.length, migration };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
