import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, schemaVersion } from '../../../src/store/index.js';
import { buildTemplate } from '../../../src/store/pglite-template-build.js';
import { seedFromTemplate } from '../../../src/store/pglite-template.js';

// A new PGlite data dir starts from the template the build packs (initdb and migrations done),
// instead of running initdb; a template from another PGlite version is not used.
let work: string;
let template: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'hostplane-template-'));
  template = path.join(work, 'template.tar.gz');
  const built = await buildTemplate(template);
  expect(built.bytes).toBeGreaterThan(0);
}, 120_000);
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('the PGlite template', () => {
  it('seeds a new data dir that opens with a current schema and no initdb', async () => {
    const dir = path.join(work, 'fresh', 'pglite');
    expect(await seedFromTemplate(dir, template)).toBe(true);
    expect(existsSync(path.join(dir, 'PG_VERSION'))).toBe(true);
    expect(existsSync(`${dir}.seed-${process.pid}`)).toBe(false);
    const store = await openStore({ pgliteDir: dir, pgliteTemplate: false });
    try {
      expect(await schemaVersion(store)).toMatchObject({ current: true, pending: [] });
    } finally {
      await store.close();
    }
  });

  it('leaves a data dir with anything in it alone', async () => {
    const dir = path.join(work, 'used');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'something'), 'x');
    expect(await seedFromTemplate(dir, template)).toBe(false);
    expect(existsSync(path.join(dir, 'PG_VERSION'))).toBe(false);
  });

  it('is not used when another PGlite version made it', async () => {
    const manifestFile = template.replace(/\.tar\.gz$/, '.json');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8'));
    await writeFile(manifestFile, JSON.stringify({ ...manifest, pglite: '0.0.1' }));
    try {
      expect(await seedFromTemplate(path.join(work, 'other-version'), template)).toBe(false);
    } finally {
      await writeFile(manifestFile, JSON.stringify(manifest));
    }
  });
});
