import { existsSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { SMALL_BLOB_MAX_BYTES } from '../../../src/blob/small-blob-db.js';
import { BATCH_MAX_BYTES, BATCH_MAX_ROWS, RETRY_MAX_PAUSE_MS } from '../../../src/blob/small-blob-writes.js';
import { eventually } from '../../support/eventually.js';
import { smallBlobFolder, total } from './small-blob-harness.js';

// The small objects' write queue: its turns of the event loop, its batches, its end at close().

describe("SmallBlobDb's write queue", () => {
  const folder = smallBlobFolder();
  const { other, store } = folder;

  it('lets the event loop turn within a long queue of writes', async () => {
    const blobs = store();
    await blobs.put('blobs/a', Buffer.from('a'));
    // Copies of a row: one transaction each, queued in this turn.
    const copies = Array.from({ length: 3_000 }, (_, i) => blobs.copy('blobs/a', `blobs/c${i}`));
    let lastDone = false;
    void copies.at(-1)!.then(() => (lastDone = true));
    const seen: { immediate?: boolean; timer?: boolean } = {};
    setImmediate(() => (seen.immediate = lastDone));
    setTimeout(() => (seen.timer = lastDone), 0);
    await Promise.all(copies);
    expect(seen).toEqual({ immediate: false, timer: false });
    expect((await blobs.getBuffer('blobs/c2999'))?.toString()).toBe('a');
  });

  it('deletes many keys (queued deletes share transactions) without exhausting the stack', async () => {
    const blobs = store();
    const keys = Array.from({ length: 20_000 }, (_, i) => `blobs/q${i}`);
    await blobs.put('blobs/q7', Buffer.from('q'));
    await Promise.all(keys.map((key) => blobs.delete(key)));
    expect(await blobs.head('blobs/q7')).toBeUndefined();
  });

  /** A trigger that fails the transaction of any batch holding the key `blobs/poison`. */
  const poison = (): void => {
    other().exec(`create trigger poison before insert on small_blobs when new.key = 'blobs/poison'
      begin select raise(abort, 'poisoned'); end`);
  };

  it('starts a new batch of puts past its cap of rows', async () => {
    const blobs = store();
    await blobs.put('blobs/first', Buffer.from('f'));
    poison();
    const full = [
      blobs.put('blobs/poison', Buffer.from('p')),
      ...Array.from({ length: BATCH_MAX_ROWS - 1 }, (_, i) => blobs.put(`blobs/r${i}`, Buffer.from('r'))),
    ];
    const next = blobs.put('blobs/next', Buffer.from('n'));
    const outcomes = await Promise.allSettled(full);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(0);
    await expect(next).resolves.toBeUndefined();
    expect((await blobs.getBuffer('blobs/next'))?.toString()).toBe('n');
    expect(await blobs.head('blobs/r0')).toBeUndefined();
  });

  it('starts a new batch of puts past its cap of bytes', async () => {
    const blobs = store();
    await blobs.put('blobs/first', Buffer.from('f'));
    poison();
    const rows = Math.floor(BATCH_MAX_BYTES / SMALL_BLOB_MAX_BYTES);
    const full = [
      blobs.put('blobs/poison', Buffer.alloc(SMALL_BLOB_MAX_BYTES)),
      ...Array.from({ length: rows - 1 }, (_, i) =>
        blobs.put(`blobs/r${i}`, Buffer.alloc(SMALL_BLOB_MAX_BYTES)),
      ),
    ];
    const next = blobs.put('blobs/next', Buffer.alloc(SMALL_BLOB_MAX_BYTES, 1));
    const outcomes = await Promise.allSettled(full);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(0);
    await expect(next).resolves.toBeUndefined();
    expect((await blobs.head('blobs/next'))?.size).toBe(SMALL_BLOB_MAX_BYTES);
  });

  it('rejects the queued and retrying writes at close(), and opens nothing again after it', async () => {
    const blobs = store({ busyGiveUpMs: 60_000 });
    await blobs.put('blobs/before', Buffer.from('before'));
    const holder = other();
    holder.exec('BEGIN IMMEDIATE');
    const retries = await total('hostplane_small_blob_busy_retries_total');
    const put = blobs.put('blobs/p', Buffer.from('p'));
    const deleted = blobs.delete('blobs/before');
    void put.catch(() => undefined);
    void deleted.catch(() => undefined);
    await eventually(
      'a busy retry',
      async () => (await total('hostplane_small_blob_busy_retries_total')) > retries,
    );
    blobs.close();
    await expect(put).rejects.toThrow(/closed/);
    await expect(deleted).rejects.toThrow(/closed/);
    holder.exec('ROLLBACK');
    holder.close();
    await rm(folder.root, { recursive: true, force: true });
    // An absence: longer than the longest pause between two attempts, so that a retry left
    // running would have opened the database (and made its folder) again by now.
    await new Promise((resolve) => setTimeout(resolve, 4 * RETRY_MAX_PAUSE_MS));
    expect(existsSync(folder.root)).toBe(false);
    const after = [blobs.put('blobs/after', Buffer.from('a')), blobs.put('blobs/after2', Buffer.from('b'))];
    await expect(after[0]).rejects.toThrow(/closed/);
    await expect(after[1]).rejects.toThrow(/closed/);
    await expect(blobs.getBuffer('blobs/after')).rejects.toThrow(/closed/);
    expect(existsSync(folder.root)).toBe(false);
  });

  it("drops a queued delete whose signal aborts before its turn (the sweeper's deadline): the blob stays", async () => {
    const blobs = store({ busyGiveUpMs: 60_000 });
    await blobs.put('blobs/row', Buffer.from('row'));
    await blobs.put('blobs/file', Buffer.alloc(SMALL_BLOB_MAX_BYTES + 1, 1));
    await blobs.put('blobs/other', Buffer.from('other'));
    const holder = other();
    holder.exec('BEGIN IMMEDIATE');
    const retries = await total('hostplane_small_blob_busy_retries_total');
    const sweep = new AbortController();
    // The sweep's deletes (a row, a file) and another caller's, all in one batch that waits for the lock.
    const dropped = [blobs.delete('blobs/row', sweep.signal), blobs.delete('blobs/file', sweep.signal)];
    const kept = blobs.delete('blobs/other');
    const settled = Promise.allSettled(dropped);
    await eventually(
      'a busy retry',
      async () => (await total('hostplane_small_blob_busy_retries_total')) > retries,
    );
    const reason = new Error('claim deadline passed');
    sweep.abort(reason);
    // Rejected at the abort (before the next turn of the event loop), while the lock is still
    // held: the sweep does not wait for the queue.
    const outcomes = await Promise.race([settled, nextTurn('still pending')]);
    expect(outcomes).toEqual([
      { status: 'rejected', reason },
      { status: 'rejected', reason },
    ]);
    holder.exec('ROLLBACK');
    await kept;
    expect(await blobs.head('blobs/other')).toBeUndefined();
    // Nothing of the dropped deletes ran, later: the row and the file are both still there.
    await blobs.put('blobs/after', Buffer.from('after'));
    expect((await blobs.getBuffer('blobs/row'))?.toString()).toBe('row');
    expect((await blobs.head('blobs/file'))?.size).toBe(SMALL_BLOB_MAX_BYTES + 1);
    // A later sweep's delete removes them.
    await blobs.delete('blobs/row', new AbortController().signal);
    await blobs.delete('blobs/file', new AbortController().signal);
    expect(await blobs.head('blobs/row')).toBeUndefined();
    expect(await blobs.head('blobs/file')).toBeUndefined();
  });

  it('counts toward a checkpoint only the deletes that removed a row', async () => {
    const checkpoints = 'hostplane_small_blob_checkpoints_total';
    const blobs = store({ checkpointBytes: 64 * 1024 });
    const before = await total(checkpoints);
    // Twenty deletes that remove nothing (a page each would be 80 KiB, past the threshold).
    await Promise.all(Array.from({ length: 20 }, (_, i) => blobs.delete(`blobs/none-${i}`)));
    // An absence: far longer than the worker takes to start and answer a checkpoint.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await total(checkpoints)).toBe(before);
    // A row past the threshold is checkpointed (the worker works).
    await blobs.put('blobs/a', Buffer.alloc(64 * 1024, 1));
    await eventually('a checkpoint', async () => (await total(checkpoints)) > before, 10_000);
    expect((await stat(folder.file)).size).toBeGreaterThan(64 * 1024);
  });
});
