import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { BlobListing, BlobStore } from '../../../src/blob/blob-store.js';
import { FsBlobStore } from '../../../src/blob/fs-blob-store.js';
import { SMALL_BLOB_MAX_BYTES } from '../../../src/blob/small-blob-db.js';
import { S3BlobStore } from '../../../src/blob/s3-blob-store.js';
import { createBucket } from '../../support/minio.js';

interface Harness {
  store: BlobStore;
  close(): Promise<void>;
}

const s3Store = (bucket: string): S3BlobStore => {
  const s3 = inject('s3');
  return new S3BlobStore({
    bucket,
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
};

const implementations: { kind: 'fs' | 's3'; open(): Promise<Harness> }[] = [
  {
    kind: 'fs',
    open: async () => {
      const root = await mkdtemp(path.join(tmpdir(), 'hostplane-blobs-'));
      const store = new FsBlobStore(root);
      return {
        store,
        close: async () => {
          store.close();
          await rm(root, { recursive: true, force: true });
        },
      };
    },
  },
  {
    kind: 's3',
    open: async () => {
      const store = s3Store(await createBucket(inject('s3')));
      await store.ensureBucket(); // the bucket exists: a no-op
      return { store, close: async () => store.client.destroy() };
    },
  },
];

const MiB = 1024 * 1024;

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

/** Bytes 0..n-1 with a pattern that makes any shift or truncation visible. */
const patterned = (n: number): Buffer =>
  Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + (i >> 8)) % 256));

/** A stream of `total` random bytes made chunk by chunk; `digest()` is their sha256 once consumed. */
function generatedStream(total: number, chunkSize = 64 * 1024): { stream: Readable; digest(): string } {
  const hash = createHash('sha256');
  let produced = 0;
  const stream = new Readable({
    read() {
      if (produced >= total) {
        this.push(null);
        return;
      }
      const chunk = randomBytes(Math.min(chunkSize, total - produced));
      produced += chunk.length;
      hash.update(chunk);
      this.push(chunk);
    },
  });
  return { stream, digest: () => hash.digest('hex') };
}

async function sha256Of(body: Readable): Promise<{ hash: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    bytes += buf.length;
    hash.update(buf);
  }
  return { hash: hash.digest('hex'), bytes };
}

async function collect(listing: AsyncIterable<BlobListing>): Promise<BlobListing[]> {
  const out: BlobListing[] = [];
  for await (const item of listing) out.push(item);
  return out.sort((a, b) => a.key.localeCompare(b.key));
}

describe.each(implementations)('$kind blob store', ({ kind, open }) => {
  let harness: Harness;
  let store: BlobStore;

  beforeAll(async () => {
    harness = await open();
    store = harness.store;
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('reports its kind and answers ping', async () => {
    expect(store.kind).toBe(kind);
    await expect(store.ping()).resolves.toBeUndefined();
  });

  it('round-trips put and getBuffer, bytes intact', async () => {
    const body = Buffer.concat([patterned(256), Buffer.from('héllo\0wörld\r\n')]);
    await store.put('roundtrip/a.bin', body);
    const back = await store.getBuffer('roundtrip/a.bin');
    expect(back).toBeDefined();
    expect(back!.equals(body)).toBe(true);
  });

  it('round-trips an empty object', async () => {
    await store.put('roundtrip/empty', Buffer.alloc(0));
    expect((await store.getBuffer('roundtrip/empty'))?.length).toBe(0);
    expect(await store.head('roundtrip/empty')).toEqual({ size: 0 });
  });

  it('overwrites on put', async () => {
    await store.put('roundtrip/over', Buffer.from('first version'));
    await store.put('roundtrip/over', Buffer.from('second'));
    expect((await store.getBuffer('roundtrip/over'))?.toString()).toBe('second');
    expect(await store.head('roundtrip/over')).toEqual({ size: 6 });
  });

  it('answers undefined for a missing key', async () => {
    expect(await store.get('missing/nope')).toBeUndefined();
    expect(await store.get('missing/nope', { start: 0, end: 10 })).toBeUndefined();
    expect(await store.getBuffer('missing/nope')).toBeUndefined();
    expect(await store.head('missing/nope')).toBeUndefined();
  });

  it('heads the size', async () => {
    await store.put('head/x', patterned(1234));
    expect(await store.head('head/x')).toEqual({ size: 1234 });
  });

  it('gets the whole object as a stream with its size', async () => {
    const body = patterned(5000);
    await store.put('get/whole', body);
    const obj = await store.get('get/whole');
    expect(obj?.size).toBe(5000);
    expect((await readAll(obj!.body)).equals(body)).toBe(true);
  });

  it('gets exactly the inclusive byte range, with the size of the whole object', async () => {
    const body = patterned(1000);
    await store.put('range/x', body);
    for (const range of [
      { start: 100, end: 199 },
      { start: 0, end: 0 },
      { start: 0, end: 999 },
      { start: 999, end: 999 },
      { start: 10, end: 10 },
      { start: 500, end: 998 },
    ]) {
      const obj = await store.get('range/x', range);
      expect(obj, `range ${range.start}-${range.end}`).toBeDefined();
      expect(obj!.size, `size for range ${range.start}-${range.end}`).toBe(1000);
      const got = await readAll(obj!.body);
      expect(got.length, `length for range ${range.start}-${range.end}`).toBe(range.end - range.start + 1);
      expect(got.equals(body.subarray(range.start, range.end + 1))).toBe(true);
    }
  });

  it('gets ranges of an object too large for the small objects, and copies it', async () => {
    const body = patterned(SMALL_BLOB_MAX_BYTES + 4321);
    await store.put('range/large', body);
    expect(await store.head('range/large')).toEqual({ size: body.length });
    const start = SMALL_BLOB_MAX_BYTES + 100;
    const obj = await store.get('range/large', { start, end: start + 99 });
    expect(obj?.size).toBe(body.length);
    expect((await readAll(obj!.body)).equals(body.subarray(start, start + 100))).toBe(true);
    await store.copy('range/large', 'range/large-copy');
    expect((await store.getBuffer('range/large-copy'))?.equals(body)).toBe(true);
    expect((await store.getBuffer('range/large'))?.equals(body)).toBe(true);
  });

  it('copies a small object, and replaces an object of either size by one of the other', async () => {
    await store.put('copy/small', Buffer.from('small'));
    await store.copy('copy/small', 'copy/small-copy');
    expect((await store.getBuffer('copy/small-copy'))?.toString()).toBe('small');
    expect((await store.getBuffer('copy/small'))?.toString()).toBe('small');
    const large = patterned(SMALL_BLOB_MAX_BYTES + 1);
    await store.put('copy/small-copy', large);
    expect(await store.head('copy/small-copy')).toEqual({ size: large.length });
    expect((await store.getBuffer('copy/small-copy'))?.equals(large)).toBe(true);
    await store.put('copy/small-copy', Buffer.from('again'));
    expect((await store.getBuffer('copy/small-copy'))?.toString()).toBe('again');
    await store.copy('copy/small-copy', 'copy/over-large');
    await store.putStream('copy/streamed', Readable.from([Buffer.from('streamed')]));
    await store.copy('copy/streamed', 'copy/small-copy');
    expect((await store.getBuffer('copy/small-copy'))?.toString()).toBe('streamed');
    expect((await collect(store.list('copy/small-copy'))).map((l) => [l.key, l.size])).toEqual([
      ['copy/small-copy', 8],
    ]);
  });

  it('streams a small body in (single request) and counts its bytes', async () => {
    const { stream, digest } = generatedStream(100_000, 10_000);
    expect(await store.putStream('stream/small', stream)).toBe(100_000);
    const obj = await store.get('stream/small');
    expect(obj?.size).toBe(100_000);
    expect(await sha256Of(obj!.body)).toEqual({ hash: digest(), bytes: 100_000 });
  });

  it('streams a 20 MiB body in without buffering it and reads it back intact', async () => {
    // Not a multiple of the chunk or part size, to catch off-by-one at part boundaries.
    const total = 20 * MiB + 12_345;
    const { stream, digest } = generatedStream(total);
    expect(await store.putStream('stream/large', stream)).toBe(total);
    const expected = digest();
    expect(await store.head('stream/large')).toEqual({ size: total });
    const obj = await store.get('stream/large');
    expect(obj?.size).toBe(total);
    expect(await sha256Of(obj!.body)).toEqual({ hash: expected, bytes: total });

    // A range across the 8 MiB boundary of a multipart upload.
    const ranged = await store.get('stream/large', { start: 8 * MiB - 10, end: 8 * MiB + 9 });
    expect(ranged?.size).toBe(total);
    expect((await readAll(ranged!.body)).length).toBe(20);
  });

  it('rejects putStream when the body fails, and stores nothing', async () => {
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent >= 3) {
          this.destroy(new Error('boom'));
          return;
        }
        sent++;
        this.push(randomBytes(64 * 1024));
      },
    });
    await expect(store.putStream('stream/failed', failing)).rejects.toThrow();
    expect(await store.head('stream/failed')).toBeUndefined();
  });

  it('moves: the source is gone, the target holds the bytes', async () => {
    const body = patterned(300);
    await store.put('move/src', body);
    await store.move('move/src', 'move/dst/target');
    expect(await store.head('move/src')).toBeUndefined();
    expect(await store.getBuffer('move/src')).toBeUndefined();
    expect((await store.getBuffer('move/dst/target'))?.equals(body)).toBe(true);
  });

  it('moves onto itself without losing the object', async () => {
    const body = Buffer.from('stays where it is');
    await store.put('move/self', body);
    await store.move('move/self', 'move/self');
    expect((await store.getBuffer('move/self'))?.equals(body)).toBe(true);
  });

  it('moves over an existing target', async () => {
    await store.put('move/over-src', Buffer.from('new'));
    await store.put('move/over-dst', Buffer.from('old contents'));
    await store.move('move/over-src', 'move/over-dst');
    expect((await store.getBuffer('move/over-dst'))?.toString()).toBe('new');
    expect(await store.head('move/over-src')).toBeUndefined();
  });

  it('moves keys with spaces, plus signs, percent signs and non-ASCII characters', async () => {
    const from = 'move/odd name+plus%25 é.txt';
    const to = 'move/odd target+ü %.txt';
    await store.put(from, Buffer.from('odd'));
    await store.move(from, to);
    expect(await store.head(from)).toBeUndefined();
    expect((await store.getBuffer(to))?.toString()).toBe('odd');
  });

  it('rejects moving a missing key', async () => {
    await expect(store.move('move/missing', 'move/never')).rejects.toThrow();
    expect(await store.head('move/never')).toBeUndefined();
  });

  it('deletes, idempotently', async () => {
    await store.put('delete/x', Buffer.from('bye'));
    await store.delete('delete/x');
    expect(await store.head('delete/x')).toBeUndefined();
    expect(await store.get('delete/x')).toBeUndefined();
    await expect(store.delete('delete/x')).resolves.toBeUndefined();
    await expect(store.delete('delete/never-existed')).resolves.toBeUndefined();
  });

  it('lists exactly the keys under a prefix, with sizes and dates', async () => {
    const sizes: Record<string, number> = {
      'list/a/1': 1,
      'list/a/2': 22,
      'list/a/sub/3': 333,
      'list/ab/4': 4,
      'list/b/5': 5,
      'listing/6': 6,
    };
    for (const [key, size] of Object.entries(sizes)) await store.put(key, patterned(size));

    const underA = await collect(store.list('list/a/'));
    expect(underA.map((item) => item.key)).toEqual(['list/a/1', 'list/a/2', 'list/a/sub/3']);
    for (const item of underA) {
      expect(item.size).toBe(sizes[item.key]);
      expect(item.lastModified).toBeInstanceOf(Date);
      expect(Number.isNaN(item.lastModified.getTime())).toBe(false);
    }

    // A prefix is a string prefix, not a folder: `list/a` also matches `list/ab/...`.
    expect((await collect(store.list('list/a'))).map((item) => item.key)).toEqual([
      'list/a/1',
      'list/a/2',
      'list/a/sub/3',
      'list/ab/4',
    ]);
    expect((await collect(store.list('list/'))).map((item) => item.key)).toEqual([
      'list/a/1',
      'list/a/2',
      'list/a/sub/3',
      'list/ab/4',
      'list/b/5',
    ]);
    expect(await collect(store.list('list/none/'))).toEqual([]);
    expect(await collect(store.list('nothing-here/'))).toEqual([]);
  });

  it('lists more than one page of keys', async () => {
    // S3 pages at 1000 keys.
    const keys = Array.from({ length: 1005 }, (_, i) => `paged/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 50) {
      await Promise.all(keys.slice(i, i + 50).map((key) => store.put(key, Buffer.from(key))));
    }
    expect((await collect(store.list('paged/'))).map((item) => item.key)).toEqual(keys);
  });
});

describe('FsBlobStore', () => {
  const withRoot = async (fn: (root: string) => Promise<void>) => {
    const root = await mkdtemp(path.join(tmpdir(), 'hostplane-blobs-'));
    try {
      await fn(root);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  };
  const fileAt = (root: string, key: string) =>
    stat(path.join(root, key)).then(
      (info) => info.isFile(),
      () => false,
    );

  it('keeps small objects in its database, not as a file each; large and streamed ones as files', async () => {
    await withRoot(async (root) => {
      const store = new FsBlobStore(root);
      await store.put('blobs/small', patterned(1024));
      await store.put('blobs/limit', patterned(SMALL_BLOB_MAX_BYTES));
      await store.put('blobs/large', patterned(SMALL_BLOB_MAX_BYTES + 1));
      await store.putStream('tmp/streamed', Readable.from([Buffer.from('s')]));
      await store.copy('tmp/streamed', 'blobs/copied');
      await store.copy('blobs/large', 'blobs/large-copy');
      expect(await fileAt(root, 'blobs/small')).toBe(false);
      expect(await fileAt(root, 'blobs/limit')).toBe(false);
      expect(await fileAt(root, 'blobs/copied')).toBe(false);
      expect(await fileAt(root, 'small-blobs.sqlite')).toBe(true);
      expect(await fileAt(root, 'blobs/large')).toBe(true);
      expect(await fileAt(root, 'blobs/large-copy')).toBe(true);
      expect(await fileAt(root, 'tmp/streamed')).toBe(true);
      expect((await collect(store.list('blobs/'))).map((l) => [l.key, l.size])).toEqual([
        ['blobs/copied', 1],
        ['blobs/large', SMALL_BLOB_MAX_BYTES + 1],
        ['blobs/large-copy', SMALL_BLOB_MAX_BYTES + 1],
        ['blobs/limit', SMALL_BLOB_MAX_BYTES],
        ['blobs/small', 1024],
      ]);
      // The database's own files are not objects.
      expect((await collect(store.list(''))).map((l) => l.key)).not.toContain('small-blobs.sqlite');
      store.close();
    });
  });

  it('reads, ranges, lists, copies, moves and deletes small files written before it kept small objects', async () => {
    await withRoot(async (root) => {
      await mkdir(path.join(root, 'blobs'), { recursive: true });
      const old = new Date(Date.now() - 3_600_000);
      for (const name of ['old-a', 'old-b', 'old-c']) {
        await writeFile(path.join(root, 'blobs', name), `bytes of ${name}`);
        await utimes(path.join(root, 'blobs', name), old, old);
      }
      const store = new FsBlobStore(root);
      await store.put('blobs/new', Buffer.from('new bytes'));
      expect((await store.getBuffer('blobs/old-a'))?.toString()).toBe('bytes of old-a');
      expect(await store.head('blobs/old-a')).toEqual({ size: 14 });
      const ranged = await store.get('blobs/old-a', { start: 9, end: 13 });
      expect(ranged?.size).toBe(14);
      expect((await readAll(ranged!.body)).toString()).toBe('old-a');
      const listed = await collect(store.list('blobs/'));
      expect(listed.map((l) => l.key)).toEqual(['blobs/new', 'blobs/old-a', 'blobs/old-b', 'blobs/old-c']);
      expect(Math.abs(listed[1]!.lastModified.getTime() - old.getTime())).toBeLessThan(1000);
      await store.copy('blobs/old-b', 'blobs/copy-of-b');
      expect((await store.getBuffer('blobs/copy-of-b'))?.toString()).toBe('bytes of old-b');
      await store.move('blobs/old-c', 'blobs/moved-c');
      expect(await store.head('blobs/old-c')).toBeUndefined();
      expect((await store.getBuffer('blobs/moved-c'))?.toString()).toBe('bytes of old-c');
      // A key with both a file (from before) and a row: the row's bytes; a delete removes both.
      await store.put('blobs/old-b', Buffer.from('bytes of old-b'));
      expect((await collect(store.list('blobs/old-b'))).length).toBe(1);
      for (const key of ['blobs/old-a', 'blobs/old-b', 'blobs/new']) await store.delete(key);
      for (const key of ['blobs/old-a', 'blobs/old-b', 'blobs/new']) {
        expect(await store.head(key), key).toBeUndefined();
        expect(await store.get(key), key).toBeUndefined();
        expect(await fileAt(root, key), key).toBe(false);
      }
      expect((await collect(store.list('blobs/'))).map((l) => l.key)).toEqual([
        'blobs/copy-of-b',
        'blobs/moved-c',
      ]);
      store.close();
    });
  });

  it('moves a small object over a file of the target, and its source key reads nothing after', async () => {
    await withRoot(async (root) => {
      await mkdir(path.join(root, 'm'), { recursive: true });
      await writeFile(path.join(root, 'm', 'src'), 'old file of src');
      await writeFile(path.join(root, 'm', 'dst'), 'old file of dst');
      const store = new FsBlobStore(root);
      await store.put('m/src', Buffer.from('row of src'));
      await store.move('m/src', 'm/dst');
      expect(await store.head('m/src')).toBeUndefined();
      expect((await store.getBuffer('m/dst'))?.toString()).toBe('row of src');
      await store.delete('m/dst');
      expect(await store.head('m/dst')).toBeUndefined();
      store.close();
    });
  });

  it("two stores on one folder (two processes) see each other's small objects", async () => {
    await withRoot(async (root) => {
      const one = new FsBlobStore(root);
      const two = new FsBlobStore(root);
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 ? one : two).put(`blobs/k${String(i).padStart(2, '0')}`, Buffer.from(`v${i}`)),
        ),
      );
      expect((await two.getBuffer('blobs/k01'))?.toString()).toBe('v1');
      expect((await one.getBuffer('blobs/k02'))?.toString()).toBe('v2');
      expect((await collect(one.list('blobs/'))).length).toBe(50);
      await two.delete('blobs/k01');
      expect(await one.head('blobs/k01')).toBeUndefined();
      await one.copy('blobs/k02', 'blobs/copied');
      expect((await two.getBuffer('blobs/copied'))?.toString()).toBe('v2');
      one.close();
      two.close();
    });
  });

  it('makes its folders again when they were removed under it (it makes each only once otherwise)', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'hostplane-blobs-'));
    try {
      const store = new FsBlobStore(root);
      await store.put('blobs/a', Buffer.from('a'));
      await rm(root, { recursive: true, force: true });
      await store.put('blobs/b', Buffer.from('b'));
      expect((await store.getBuffer('blobs/b'))?.toString()).toBe('b');
      await rm(path.join(root, '.tmp'), { recursive: true, force: true });
      expect(await store.putStream('blobs/c', Readable.from([Buffer.from('c')]))).toBe(1);
      await rm(path.join(root, 'blobs'), { recursive: true, force: true });
      await store.copy('blobs/c', 'blobs/d').catch(() => undefined); // its source went with the folder
      await store.put('blobs/e', Buffer.from('e'));
      await store.copy('blobs/e', 'copies/e');
      expect((await store.getBuffer('copies/e'))?.toString()).toBe('e');
      expect((await store.getBuffer('blobs/e'))?.toString()).toBe('e');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('S3BlobStore.ensureBucket', () => {
  it('creates a missing bucket, and is idempotent', async () => {
    const store = s3Store(`ensure-${randomBytes(6).toString('hex')}`);
    try {
      await expect(store.ping()).rejects.toThrow();
      await store.ensureBucket();
      await store.ensureBucket();
      await expect(store.ping()).resolves.toBeUndefined();
      await store.put('k', Buffer.from('v'));
      expect((await store.getBuffer('k'))?.toString()).toBe('v');
    } finally {
      store.client.destroy();
    }
  });

  it('succeeds when another replica creates the bucket between its look and its create', async () => {
    const bucket = `race-${randomBytes(6).toString('hex')}`;
    const ours = s3Store(bucket);
    const theirs = s3Store(bucket);
    // Ours looks (404), then theirs creates it, then ours creates: the race of two replicas starting.
    ours.client.middlewareStack.add(
      (next, context) => async (args) => {
        try {
          return await next(args);
        } catch (err) {
          if (context.commandName === 'HeadBucketCommand') await theirs.ensureBucket();
          throw err;
        }
      },
      { step: 'initialize', name: 'raceTheCreate' },
    );
    try {
      await ours.ensureBucket();
      await expect(ours.ping()).resolves.toBeUndefined();
    } finally {
      ours.client.destroy();
      theirs.client.destroy();
    }
  });
});
