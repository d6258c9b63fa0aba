import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import drizzleConfig from '../../../drizzle.config.js';

// The schema (every tables.ts, as drizzle.config.ts names them) and the migrations must agree:
// drizzle-kit, run against a copy of src/store/migrations, must find nothing to generate. A column
// added to a table without `npm run db:generate` fails here, not on a user's database.
const exec = promisify(execFile);
const root = fileURLToPath(new URL('../../..', import.meta.url));
const migrations = path.join(root, 'src/store/migrations');
const drizzleKit = path.join(root, 'node_modules/drizzle-kit/bin.cjs');

describe('the migrations', () => {
  const work: string[] = [];
  afterAll(async () => {
    await Promise.all(work.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('are what drizzle-kit generates from the schema (run `npm run db:generate` after a schema change)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-drift-'));
    work.push(dir);
    const out = path.join(dir, 'migrations');
    await cp(migrations, out, { recursive: true });
    const before = (await readdir(out)).sort();
    // drizzle.config.ts as it is (schema globs, dialect, casing), only writing into the copy. drizzle-kit
    // resolves the schema paths from its working directory and wants `out` relative to it.
    const config = path.join(dir, 'drizzle.config.json');
    await writeFile(config, JSON.stringify({ ...drizzleConfig, out: path.relative(root, out) }));
    const { stdout, stderr } = await exec(process.execPath, [drizzleKit, 'generate', '--config', config], {
      cwd: root,
      timeout: 60_000,
    });
    const added = (await readdir(out)).sort().filter((file) => !before.includes(file));
    const generated = await Promise.all(
      added
        .filter((f) => f.endsWith('.sql'))
        .map(async (f) => `${f}:\n${await readFile(path.join(out, f), 'utf8')}`),
    );
    expect(added, `drizzle-kit generated a migration:\n${generated.join('\n')}\n${stdout}${stderr}`).toEqual(
      [],
    );
    expect(stdout).toMatch(/No schema changes/);
  });
});
