import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { openStore } from './db.js';
import { migrate } from './migrate.js';
import { manifestOf, pgliteVersion, templateFile, type TemplateManifest } from './pglite-template.js';
import { packTar } from './tar.js';

/**
 * Writes the template: a new PGlite folder with every migration applied through the same path a
 * server takes (./schema-gate.ts), shut down cleanly, then packed. Run by the build
 * (`scripts/copy-assets.mjs`); the server only reads the template (./pglite-template.ts).
 */
export async function buildTemplate(
  file = templateFile,
): Promise<{ file: string; bytes: number; migration: string }> {
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
    const manifest: TemplateManifest = { pglite: pgliteVersion(), migration };
    await writeFile(manifestOf(file), `${JSON.stringify(manifest, null, 2)}\n`);
    return { file, bytes: packed.length, migration };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
