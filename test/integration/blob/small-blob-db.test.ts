import { once } from 'node:events';
import { rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { FsBlobStore } from '../../../src/blob/fs-blob-store.js';
import { SMALL_BLOB_MAX_BYTES } from '../../../src/blob/small-blob-db.js';
import { locateNativeParts } from '../../../src/config/index.js';
import { eventually } from '../../support/eventually.js';
import { smallBlobFolder, total } from './small-blob-harness.js';

// The small objects' database on the main thread: a write that meets another connection's write
// lock is retried from a timer (the event loop keeps turning), and WAL checkpoints run in a worker.

/** Counts the event loop's turns until `pending` settles; its outcome and the count. */
async function turnsWhile<T>(
  pending: Promise<T>,
): Promise<{ turns: number; result: PromiseSettledResult<T> }> {
  let turns = 0;
  let settled = false;
  const result = pending.then(
    (value) => ({ status: 'fulfilled' as const, value }),
    (reason: unknown) => ({ status: 'rejected' as const, reason }),
  );
  void result.then(() => (settled = true));
  const spin = (): void => {
    if (settled) return;
    turns++;
    setImmediate(spin);
  };
  setImmediate(spin);
  const settledResult = await result;
  return { turns, result: settledResult };
}

describe('SmallBlobDb under another connection and its WAL', () => {
  const folder = smallBlobFolder();
  const { other, store } = folder;

  it("waits for another connection's write lock without blocking the event loop, in call order", async () => {
    // A bound far above the test's waits: the writes must still be pending when the holder lets go.
    const blobs = store({ busyGiveUpMs: 60_000 });
    await blobs.put('blobs/before', Buffer.from('before'));
    await blobs.put('blobs/moved', Buffer.from('moved bytes'));
    const holder = other();
    holder.exec('BEGIN IMMEDIATE');
    holder.prepare('insert into small_blobs values (?, 1, 0, ?)').run('blobs/holder', Buffer.from('h'));
    const retries = await total('hostplane_small_blob_busy_retries_total');

    const put = blobs.put('blobs/new', Buffer.from('new bytes'));
    const gone = blobs.delete('blobs/new'); // after the put, in call order
    const again = blobs.put('blobs/new', Buffer.from('newer bytes'));
    const moved = blobs.move('blobs/moved', 'blobs/target');
    const all = Promise.all([put, gone, again, moved]);
    let settled = false;
    void all.then(
      () => (settled = true),
      () => (settled = true),
    );
    // The lock holder lets go once the store has met its lock and retried (or the store gave up).
    await eventually(
      'a busy retry',
      async () => settled || (await total('hostplane_small_blob_busy_retries_total')) > retries,
      10_000,
    );
    await eventually(
      'more retries',
      async () => settled || (await total('hostplane_small_blob_busy_retries_total')) > retries + 2,
      10_000,
    );
    // The event loop turned while the writes waited: this test's own code runs before they settle.
    expect(settled).toBe(false);
    holder.exec('COMMIT');
    await all;
    expect((await blobs.getBuffer('blobs/new'))?.toString()).toBe('newer bytes');
    expect((await blobs.getBuffer('blobs/target'))?.toString()).toBe('moved bytes');
    expect(await blobs.head('blobs/moved')).toBeUndefined();
    expect((await blobs.getBuffer('blobs/holder'))?.toString()).toBe('h');
    expect((await blobs.getBuffer('blobs/before'))?.toString()).toBe('before');
  });

  it('gives up on a write that stays busy past its bound, with the busy error, and writes again after', async () => {
    const blobs = store({ busyGiveUpMs: 100 });
    await blobs.put('blobs/before', Buffer.from('before'));
    const holder = other();
    holder.exec('BEGIN IMMEDIATE');
    const started = Date.now();
    const { turns, result } = await turnsWhile(blobs.put('blobs/late', Buffer.from('late')));
    expect(result.status).toBe('rejected');
    expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_BUSY' });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(turns).toBeGreaterThan(0);
    const { result: deleted } = await turnsWhile(blobs.delete('blobs/before'));
    expect((deleted as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_BUSY' });
    holder.exec('ROLLBACK');
    await blobs.put('blobs/late', Buffer.from('late'));
    expect((await blobs.getBuffer('blobs/late'))?.toString()).toBe('late');
    expect((await blobs.getBuffer('blobs/before'))?.toString()).toBe('before');
  });

  /** 80 rows of 64 KiB (bytes `fill + i`: SQLite writes no page of a row it is given again unchanged). */
  const fiveMiB = (blobs: FsBlobStore, fill = 0) =>
    Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        blobs.put(`blobs/big-${i}`, Buffer.alloc(SMALL_BLOB_MAX_BYTES, fill + i)),
      ),
    );

  it('commits never checkpoint the WAL themselves (no auto-checkpoint on the main thread)', async () => {
    const blobs = store({ checkpointBytes: Number.POSITIVE_INFINITY });
    await fiveMiB(blobs);
    await fiveMiB(blobs, 100);
    // All 10 MiB are still in the WAL: SQLite's auto-checkpoint (every 1000 pages) would have
    // copied them into the database file inside the committing call.
    expect((await stat(folder.file)).size).toBeLessThan(1024 * 1024);
    expect((await stat(`${folder.file}-wal`)).size).toBeGreaterThan(10 * 1024 * 1024);
    expect((await blobs.getBuffer('blobs/big-7'))?.equals(Buffer.alloc(SMALL_BLOB_MAX_BYTES, 107))).toBe(
      true,
    );
  });

  it('checkpoints the WAL in a worker once the bytes written pass the threshold', async () => {
    const blobs = store();
    const before = await total('hostplane_small_blob_checkpoints_total');
    const okBefore = await total('hostplane_small_blob_checkpoints_total', 'ok');
    await fiveMiB(blobs);
    await eventually(
      'a checkpoint by the worker',
      async () => (await total('hostplane_small_blob_checkpoints_total')) > before,
      10_000,
    );
    expect(await total('hostplane_small_blob_checkpoints_total', 'ok')).toBeGreaterThan(okBefore);
    // The rows are in the database file now, read back from a fresh connection.
    expect((await stat(folder.file)).size).toBeGreaterThan(4 * 1024 * 1024);
    const fresh = other();
    expect((fresh.prepare('select count(*) as n from small_blobs').get() as { n: number }).n).toBe(80);
    expect((await blobs.getBuffer('blobs/big-3'))?.equals(Buffer.alloc(SMALL_BLOB_MAX_BYTES, 3))).toBe(true);
  });

  it('checkpoints on its own connection, and says so once, when the worker keeps failing', async () => {
    const lines: string[] = [];
    const logger = pino({}, { write: (line: string) => void lines.push(line) });
    const blobs = store({
      checkpointBytes: SMALL_BLOB_MAX_BYTES,
      checkpointWorker: new URL('file:///nonexistent/hostplane-checkpoint-worker.js'),
      logger,
    });
    const failed = await total('hostplane_small_blob_checkpoints_total', 'failed');
    let i = 0;
    // Each round writes past the threshold: a checkpoint the worker fails, until the store gives it up.
    await eventually(
      'the WAL checkpointed all the same',
      async () => {
        await blobs.put(`blobs/r${i}`, Buffer.alloc(SMALL_BLOB_MAX_BYTES, i++));
        return (await stat(folder.file)).size > 2 * SMALL_BLOB_MAX_BYTES;
      },
      20_000,
    );
    expect(await total('hostplane_small_blob_checkpoints_total', 'failed')).toBeGreaterThanOrEqual(
      failed + 3,
    );
    const wal = (await stat(`${folder.file}-wal`)).size;
    for (let j = 0; j < 40; j++) await blobs.put(`blobs/more${j}`, Buffer.alloc(SMALL_BLOB_MAX_BYTES, j));
    // 2.5 MiB more, and the WAL is no longer than before (or a few rows): it starts over after each checkpoint.
    expect((await stat(`${folder.file}-wal`)).size).toBeLessThanOrEqual(
      Math.max(wal, 4 * SMALL_BLOB_MAX_BYTES),
    );
    expect(lines.filter((line) => line.includes('on the main connection'))).toHaveLength(1);
    expect((await blobs.getBuffer('blobs/more39'))?.equals(Buffer.alloc(SMALL_BLOB_MAX_BYTES, 39))).toBe(
      true,
    );
  });

  it('tries the worker again after a cool-down, and goes back to it once it works', async () => {
    const lines: string[] = [];
    const logger = pino({}, { write: (line: string) => void lines.push(line) });
    const checkpoints = 'hostplane_small_blob_checkpoints_total';
    const failing = `${folder.file}.fail`;
    await writeFile(failing, '');
    const blobs = store({
      checkpointBytes: SMALL_BLOB_MAX_BYTES,
      checkpointWorker: new URL('./flaky-checkpoint-worker.ts', import.meta.url),
      checkpointRetryMs: 50,
      logger,
    });
    let i = 0;
    const write = () => blobs.put(`blobs/r${i}`, Buffer.alloc(SMALL_BLOB_MAX_BYTES, i++ % 256));
    const fallback = await total(checkpoints, 'fallback');
    // Each round writes past the threshold: the worker fails 3 times, then the main thread checkpoints.
    await eventually('checkpoints on the main thread', async () => {
      await write();
      return (await total(checkpoints, 'fallback')) > fallback;
    });
    // The worker works again: one of the next thresholds past the cool-down tries it, and it stays.
    await rm(failing);
    const ok = await total(checkpoints, 'ok');
    await eventually(
      'a checkpoint by the worker again',
      async () => {
        await write();
        return (await total(checkpoints, 'ok')) > ok;
      },
      10_000,
    );
    const fallbackAfter = await total(checkpoints, 'fallback');
    const okAfter = await total(checkpoints, 'ok');
    await eventually('another checkpoint by the worker', async () => {
      await write();
      return (await total(checkpoints, 'ok')) > okAfter;
    });
    expect(await total(checkpoints, 'fallback')).toBe(fallbackAfter);
    expect(lines.filter((line) => line.includes('on the main connection'))).toHaveLength(1);
    expect(lines.filter((line) => line.includes('worker checkpoints the WAL again'))).toHaveLength(1);
  });

  it('a read that meets a lock held for a moment waits for it (a first open of a fresh file here)', async () => {
    // Another thread holds the file's exclusive lock for 50 ms: a read on the main thread waits.
    const holder = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
      const Database = require(workerData.module);
      const db = new Database(workerData.file, { nativeBinding: workerData.binding });
      db.pragma('journal_mode = WAL');
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('create table held (x)'); // a write: the exclusive lock is taken and kept
      parentPort.postMessage('locked');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
      db.close();
      parentPort.postMessage('released');`,
      {
        eval: true,
        workerData: {
          module: createRequire(import.meta.url).resolve('better-sqlite3'),
          binding: locateNativeParts().binding,
          file: folder.file,
        },
      },
    );
    const released = once(holder, 'message').then(() => once(holder, 'message'));
    try {
      await once(holder, 'message');
      const blobs = store();
      expect(await blobs.head('blobs/none')).toBeUndefined();
      await released;
      await blobs.put('blobs/after', Buffer.from('after'));
      expect((await blobs.getBuffer('blobs/after'))?.toString()).toBe('after');
    } finally {
      await holder.terminate();
    }
  });
});
