import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../../src/blob/fs-blob-store.js';
import { SMALL_BLOB_DB_FILE, SMALL_BLOB_MAX_BYTES } from '../../../src/blob/small-blob-db.js';
import { locateNativeParts } from '../../../src/config/index.js';
import { registry } from '../../../src/observability/index.js';
import { eventually } from '../../support/eventually.js';

// The small objects' database on the main thread: a write that meets another connection's write
// lock is retried from a timer (the event loop keeps turning), and WAL checkpoints run in a worker.

/** A counter's total over its labels (0 while the code registers no such metric). */
async function total(name: string): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

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
  let root: string;
  let file: string;
  const opened: { close(): void }[] = [];
  const other = (): Database.Database => {
    const db = new Database(file, { nativeBinding: locateNativeParts().binding, timeout: 0 });
    opened.push(db);
    return db;
  };
  const store = (options?: ConstructorParameters<typeof FsBlobStore>[1]): FsBlobStore => {
    const s = new FsBlobStore(root, options);
    opened.push(s);
    return s;
  };

  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'hostplane-small-blobs-'));
    file = path.join(root, SMALL_BLOB_DB_FILE);
  });
  afterEach(async () => {
    for (const o of opened.splice(0)) o.close();
    await rm(root, { recursive: true, force: true });
  });

  it("waits for another connection's write lock without blocking the event loop, in call order", async () => {
    const blobs = store();
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
    const { turns, result } = await turnsWhile(
      (async () => {
        await eventually(
          'more retries',
          async () => settled || (await total('hostplane_small_blob_busy_retries_total')) > retries + 2,
          10_000,
        );
        expect(settled).toBe(false);
        holder.exec('COMMIT');
        return all;
      })(),
    );
    expect(result).toMatchObject({ status: 'fulfilled' });
    expect(turns).toBeGreaterThan(0);
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

  it('runs a long queue of writes (one transaction each) without exhausting the stack', async () => {
    const blobs = store();
    const keys = Array.from({ length: 20_000 }, (_, i) => `blobs/q${i}`);
    await blobs.put('blobs/q7', Buffer.from('q'));
    await Promise.all(keys.map((key) => blobs.delete(key)));
    expect(await blobs.head('blobs/q7')).toBeUndefined();
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
    expect((await stat(file)).size).toBeLessThan(1024 * 1024);
    expect((await stat(`${file}-wal`)).size).toBeGreaterThan(10 * 1024 * 1024);
    expect((await blobs.getBuffer('blobs/big-7'))?.equals(Buffer.alloc(SMALL_BLOB_MAX_BYTES, 107))).toBe(
      true,
    );
  });

  it('checkpoints the WAL in a worker once the bytes written pass the threshold', async () => {
    const blobs = store();
    const before = await total('hostplane_small_blob_checkpoints_total');
    await fiveMiB(blobs);
    await eventually(
      'a checkpoint by the worker',
      async () => (await total('hostplane_small_blob_checkpoints_total')) > before,
      10_000,
    );
    const ok = (await registry.getSingleMetric('hostplane_small_blob_checkpoints_total')?.get())?.values.find(
      (v) => v.labels.outcome === 'ok',
    );
    expect(ok?.value).toBeGreaterThan(0);
    // The rows are in the database file now, read back from a fresh connection.
    expect((await stat(file)).size).toBeGreaterThan(4 * 1024 * 1024);
    const fresh = other();
    expect((fresh.prepare('select count(*) as n from small_blobs').get() as { n: number }).n).toBe(80);
    expect((await blobs.getBuffer('blobs/big-3'))?.equals(Buffer.alloc(SMALL_BLOB_MAX_BYTES, 3))).toBe(true);
  });
});
