import { existsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { bin, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';

// Issue 29: a deploy's bulk upload writes hundreds of small blobs to the local folder, each a few
// file system calls on libuv's thread pool; with Node's default of 4 threads, a disk that is slow
// to create files for a while queues them one behind the other. The `hostplane` entry sizes the
// pool at 16 threads unless the operator set UV_THREADPOOL_SIZE (then that value stands).

/** The libuv pool threads of a process (Linux names them libuv-worker). */
async function poolThreads(pid: number): Promise<number> {
  const tasks = await readdir(`/proc/${pid}/task`);
  const names = await Promise.all(
    tasks.map((t) => readFile(`/proc/${pid}/task/${t}/comm`, 'utf8').catch(() => '')),
  );
  return names.filter((n) => n.trim() === 'libuv-worker').length;
}

describe.runIf(process.platform === 'linux')('hostplane serve: the thread pool', () => {
  let instance: Instance | undefined;
  afterEach(async () => {
    if (!instance) return;
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
    instance = undefined;
  });

  const serve = async (threads: string | undefined) => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    instance = await newInstance();
    delete instance.env.UV_THREADPOOL_SIZE;
    if (threads !== undefined) instance.env.UV_THREADPOOL_SIZE = threads;
    // Ready: it opened its database and blob folder, so the pool has started.
    await startServe(instance);
    return poolThreads(instance.server!.pid!);
  };

  it('runs 16 pool threads when UV_THREADPOOL_SIZE is not set', async () => {
    expect(await serve(undefined)).toBe(16);
  });

  it("keeps the operator's UV_THREADPOOL_SIZE", async () => {
    expect(await serve('6')).toBe(6);
  });
});
