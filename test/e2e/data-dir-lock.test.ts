import { existsSync } from 'node:fs';
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, cli, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';
import { exited, freePort } from '../support/procs.js';

// Issue 16, Low item 5: the standalone data dir's lock is one the kernel drops when its holder
// dies, so a crashed holder never blocks a restart, whatever became of its pid.

describe('the data dir lock', () => {
  const instances: Instance[] = [];
  afterAll(async () => {
    await Promise.all(
      instances.map(async ({ server }) => {
        if (server && server.exitCode === null) {
          server.kill('SIGKILL');
          await exited(server);
        }
      }),
    );
    await Promise.all(instances.map(({ dataDir }) => rm(dataDir, { recursive: true, force: true })));
  });

  it('refuses a second process while the holder lives, and is taken over at once after kill -9 even when the old pid is alive', async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    const first = await newInstance();
    instances.push(first);
    await startServe(first);
    const pid = first.server!.pid!;

    const second = await cli({ env: { ...first.env, PORT: String(await freePort()) } }, ['serve']);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`is in use by process ${pid}`);

    first.server!.kill('SIGKILL');
    await exited(first.server!);
    // The pid the holder left behind now names a live process (pid reuse): the test runner.
    const files = (await readdir(first.dataDir)).filter((name) => name.startsWith('pglite.lock'));
    expect(files.length).toBeGreaterThan(0);
    for (const name of files) {
      if (!name.endsWith('.sqlite')) await writeFile(path.join(first.dataDir, name), String(process.pid));
    }
    // Today's pid file, as older versions wrote it, names the same live process.
    await writeFile(path.join(first.dataDir, 'pglite.lock'), String(process.pid));

    const restarted = { ...first, port: await freePort(), serverLog: [] as string[] };
    restarted.env = { ...first.env, PORT: String(restarted.port) };
    instances.push(restarted);
    await startServe(restarted);
    expect(await stopServe(restarted)).toBe(0);
  });
});
