import { spawn } from 'node:child_process';
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

    const restarted = { ...first, port: await freePort(), serverLog: [] as string[] };
    restarted.env = { ...first.env, PORT: String(restarted.port) };
    instances.push(restarted);
    await startServe(restarted);
    expect(await stopServe(restarted)).toBe(0);
  });

  it("refuses while the previous release's pid file names a live process; removes it once that pid is dead", async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    const instance = await newInstance();
    instances.push(instance);
    // A process of the previous release holds only `<dir>.lock`, with its pid: here a live child.
    const holder = spawn('sleep', ['600'], { stdio: 'ignore' });
    const legacyLock = path.join(instance.dataDir, 'pglite.lock');
    try {
      await writeFile(legacyLock, String(holder.pid));
      const refused = await cli(instance, ['serve']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`is in use by process ${holder.pid}`);
      expect(existsSync(legacyLock)).toBe(true);
    } finally {
      holder.kill('SIGKILL');
      await exited(holder);
    }

    // The same file naming a dead pid is a leftover: the start proceeds and removes it.
    await startServe(instance);
    expect(existsSync(legacyLock)).toBe(false);
    expect(await stopServe(instance)).toBe(0);
  });
});
