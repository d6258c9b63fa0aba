import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BlobObject, BlobStore, ByteRange } from '../../../src/blob/index.js';
import { eventually } from '../../support/eventually.js';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  uploadBinary,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

// Large files (over the in-memory blob cache's 1 MiB) are served from a bounded on-disk cache of
// hot blobs, content-addressed by SHA-256: the blob store is read once per blob per edge, ranges
// are answered from the file, a fill that fails never leaves a file under the final name.

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** The real blob store, its reads of `blobs/…` counted; `failNext` makes the next read break midway. */
class CountingBlobs {
  readonly gets = new Map<string, number>();
  failNext: string | undefined;

  wrap = (inner: BlobStore): BlobStore => {
    return Object.assign(Object.create(inner) as BlobStore, {
      kind: inner.kind,
      put: (k: string, b: Buffer) => inner.put(k, b),
      putStream: (k: string, b: Readable) => inner.putStream(k, b),
      getBuffer: (k: string) => inner.getBuffer(k),
      head: (k: string) => inner.head(k),
      move: (a: string, b: string) => inner.move(a, b),
      copy: (a: string, b: string) => inner.copy(a, b),
      delete: (k: string, s?: AbortSignal) => inner.delete(k, s),
      list: (p: string) => inner.list(p),
      ping: () => inner.ping(),
      get: async (key: string, range?: ByteRange): Promise<BlobObject | undefined> => {
        if (key.startsWith('blobs/')) this.gets.set(key, (this.gets.get(key) ?? 0) + 1);
        const object = await inner.get(key, range);
        if (!object || this.failNext !== key) return object;
        this.failNext = undefined;
        // Half the bytes, then the store's connection breaks.
        const broken = new PassThrough();
        let sent = 0;
        object.body.on('data', (chunk: Buffer) => {
          if (sent >= object.size / 2) return;
          sent += chunk.length;
          broken.write(chunk);
          if (sent >= object.size / 2) {
            object.body.destroy();
            broken.destroy(new Error('blob store connection reset'));
          }
        });
        return { body: broken, size: object.size };
      },
    });
  };

  readsOf(hash: string): number {
    return this.gets.get(`blobs/${hash}`) ?? 0;
  }
}

const hostOf = (site: TestSite) => `${site.slug}.localhost:8080`;

async function getBytes(
  hp: TestHostplane,
  site: TestSite,
  urlPath: string,
  headers: Record<string, string> = {},
) {
  const res = await hp.request(urlPath, { host: hostOf(site), headers });
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

/** Names in the cache folder: blobs by hash, and anything else (temp files of fills). */
async function cacheFolder(dir: string): Promise<{ blobs: string[]; others: string[] }> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return {
    blobs: names.filter((n) => /^[0-9a-f]{64}$/.test(n)).sort(),
    others: names.filter((n) => !/^[0-9a-f]{64}$/.test(n)),
  };
}

/**
 * Waits until the folder holds these blobs (`exactly`: and no other) and no temp file: a fill's
 * readers may finish before its hash check and rename do.
 */
async function holds(dir: string, hashes: string[], exactly = false): Promise<void> {
  await eventually(`the cache folder to hold ${hashes.join(', ')}`, async () => {
    const { blobs, others } = await cacheFolder(dir);
    const all = hashes.every((h) => blobs.includes(h));
    return all && others.length === 0 && (!exactly || blobs.length === hashes.length);
  });
}

describe.each(backends)('edge disk cache of large blobs (%s)', (backend) => {
  /** Servers of one test (stopped after it); `shared`, with the defaults, serves several. */
  const servers: TestHostplane[] = [];
  const dirs: string[] = [];
  let shared: Awaited<ReturnType<typeof launch>>;
  beforeAll(async () => {
    shared = await launch();
  });
  afterEach(async () => {
    for (const hp of servers.splice(0)) await hp.stop();
  });
  afterAll(async () => {
    await shared?.hp.stop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  let sites = 0;
  async function launch(env: NodeJS.ProcessEnv = {}) {
    const counting = new CountingBlobs();
    const hp = await startHostplane(backend, { wrapBlobs: counting.wrap, env });
    const site = await hp.createSite(`disk${++sites}`);
    const dir = env.HOSTPLANE_EDGE_DISK_CACHE_DIR ?? path.join(hp.dataDir, 'edge-cache');
    return { hp, site, counting, dir };
  }

  async function start(env: NodeJS.ProcessEnv) {
    const started = await launch(env);
    servers.push(started.hp);
    return started;
  }

  async function freshDir(): Promise<string> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-edge-disk-'));
    dirs.push(dir);
    return dir;
  }

  it('serves a large file whole and by Range from the disk cache, reading the blob store once', async () => {
    const { hp, site, counting, dir } = shared;
    const big = randomBytes(3 * MiB + 123);
    const hash = sha256(big);
    await uploadBinary(hp, site, 'media/big.pdf', big);
    const before = await scrapeMetrics(hp);

    const whole = await getBytes(hp, site, '/media/big.pdf');
    expect(whole.res.status).toBe(200);
    expect(whole.res.headers.get('content-length')).toBe(String(big.length));
    expect(sha256(whole.body)).toBe(hash);
    await holds(dir, [hash]);
    expect((await readFile(path.join(dir, hash))).equals(big)).toBe(true);

    const start1 = MiB + 7;
    const end1 = start1 + 200_000 - 1;
    const ranged = await getBytes(hp, site, '/media/big.pdf', { range: `bytes=${start1}-${end1}` });
    expect(ranged.res.status).toBe(206);
    expect(ranged.res.headers.get('content-range')).toBe(`bytes ${start1}-${end1}/${big.length}`);
    expect(ranged.body.equals(big.subarray(start1, end1 + 1))).toBe(true);
    const suffix = await getBytes(hp, site, '/media/big.pdf', { range: 'bytes=-1000' });
    expect(suffix.res.status).toBe(206);
    expect(suffix.body.equals(big.subarray(big.length - 1000))).toBe(true);
    const past = await getBytes(hp, site, '/media/big.pdf', { range: `bytes=${big.length}-` });
    expect(past.res.status).toBe(416);
    expect(past.res.headers.get('content-range')).toBe(`bytes */${big.length}`);
    const again = await getBytes(hp, site, '/media/big.pdf');
    expect(sha256(again.body)).toBe(hash);
    const etag = again.res.headers.get('etag') ?? '';
    const notModified = await hp.request('/media/big.pdf', {
      host: hostOf(site),
      headers: { 'if-none-match': etag },
    });
    expect(notModified.status).toBe(304);
    const head = await hp.request('/media/big.pdf', { host: hostOf(site), method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(big.length));

    expect(counting.readsOf(hash)).toBe(1);
    // Metrics are the process's (earlier servers of this file counted too): compare the deltas.
    const metrics = await scrapeMetrics(hp);
    const event = (e: string) =>
      metricValue(metrics, 'hostplane_edge_disk_cache_events_total', { event: e }) -
      metricValue(before, 'hostplane_edge_disk_cache_events_total', { event: e });
    expect([event('miss'), event('fill'), event('hit')]).toEqual([1, 1, 3]);
    const bytes = (text: string) => metricValue(text, 'hostplane_edge_disk_cache_bytes');
    expect(bytes(metrics) - bytes(before)).toBe(big.length);
  });

  it('reads the blob store once for concurrent requests of an uncached blob', async () => {
    const { hp, site, counting, dir } = shared;
    const big = randomBytes(4 * MiB + 5);
    const hash = sha256(big);
    await uploadBinary(hp, site, 'media/shared.pdf', big);

    const ranges = [
      undefined,
      'bytes=0-99',
      `bytes=${3 * MiB}-`,
      undefined,
      'bytes=-10',
      undefined,
      'bytes=2000000-2999999',
      undefined,
    ];
    const answers = await Promise.all(
      ranges.map((range) => getBytes(hp, site, '/media/shared.pdf', range ? { range } : {})),
    );
    answers.forEach(({ res, body }, i) => {
      const range = ranges[i];
      if (range === undefined) {
        expect(res.status).toBe(200);
        expect(sha256(body)).toBe(hash);
      } else {
        expect(res.status).toBe(206);
        const [, from, to] = /^bytes=(\d*)-(\d*)$/.exec(range)!;
        const expected =
          from === ''
            ? big.subarray(big.length - Number(to))
            : big.subarray(Number(from), to === '' ? undefined : Number(to) + 1);
        expect(body.equals(expected), range).toBe(true);
      }
    });
    expect(counting.readsOf(hash)).toBe(1);
    await holds(dir, [hash]);
  });

  it(
    'stays within HOSTPLANE_EDGE_DISK_CACHE_MB, evicting the least recently used blob',
    { timeout: 90_000 },
    async () => {
      const { hp, site, counting, dir } = await start({ HOSTPLANE_EDGE_DISK_CACHE_MB: '4' });
      const before = await scrapeMetrics(hp);
      const blobs = ['a', 'b', 'c'].map((name) => ({ name, bytes: randomBytes(1.5 * MiB) }));
      for (const b of blobs) await uploadBinary(hp, site, `media/${b.name}.pdf`, b.bytes);
      const [a, b, c] = blobs.map((x) => ({ ...x, hash: sha256(x.bytes) }));

      const seen: string[] = [];
      for (const x of [a!, b!]) {
        expect(sha256((await getBytes(hp, site, `/media/${x.name}.pdf`)).body)).toBe(x.hash);
        seen.push(x.hash);
        await holds(dir, seen, true);
      }
      await holds(dir, [a!.hash, b!.hash], true);
      // b is touched again: a is now the least recently used, and goes when c comes in.
      await getBytes(hp, site, '/media/b.pdf', { range: 'bytes=0-9' });
      expect(sha256((await getBytes(hp, site, '/media/c.pdf')).body)).toBe(c!.hash);
      await holds(dir, [b!.hash, c!.hash], true);

      // a is still served, exactly (read again from the store), and b, now the oldest, goes.
      const again = await getBytes(hp, site, '/media/a.pdf', { range: `bytes=${MiB}-` });
      expect(again.res.status).toBe(206);
      expect(again.body.equals(a!.bytes.subarray(MiB))).toBe(true);
      await holds(dir, [a!.hash, c!.hash], true);
      expect(counting.readsOf(a!.hash)).toBe(2);
      expect(counting.readsOf(b!.hash)).toBe(1);

      const metrics = await scrapeMetrics(hp);
      // The gauge sums the process's edges (the shared server's too, idle meanwhile).
      const bytes = (text: string) => metricValue(text, 'hostplane_edge_disk_cache_bytes');
      expect(bytes(metrics) - bytes(before)).toBe(3 * MiB);
      const evictions = (text: string) =>
        metricValue(text, 'hostplane_edge_disk_cache_events_total', { event: 'eviction' });
      expect(evictions(metrics) - evictions(before)).toBe(2);
    },
  );

  it(
    'rebuilds its index from the folder at start and removes what fills left behind',
    { timeout: 120_000 },
    async () => {
      const dir = await freshDir();
      const bytes = async () =>
        metricValue(await scrapeMetrics(shared.hp), 'hostplane_edge_disk_cache_bytes');
      const base = await bytes();
      const big = randomBytes(2 * MiB + 1);
      const hash = sha256(big);
      const first = await start({ HOSTPLANE_EDGE_DISK_CACHE_DIR: dir });
      await uploadBinary(first.hp, first.site, 'media/kept.pdf', big);
      expect(sha256((await getBytes(first.hp, first.site, '/media/kept.pdf')).body)).toBe(hash);
      await first.hp.stop();
      servers.splice(servers.indexOf(first.hp), 1);

      // What a killed process leaves: a fill's temp file (of a process that is gone), an old one.
      await writeFile(path.join(dir, `.fill-${2 ** 22 + 17}-leftover.tmp`), big.subarray(0, 1000));
      const old = path.join(dir, `.fill-${process.pid}-older.tmp`);
      await writeFile(old, big.subarray(0, 1000));
      await utimes(old, new Date(Date.now() - 7200_000), new Date(Date.now() - 7200_000));

      const second = await start({ HOSTPLANE_EDGE_DISK_CACHE_DIR: dir });
      await eventually('temp files removed', async () => (await cacheFolder(dir)).others.length === 0);
      await uploadBinary(second.hp, second.site, 'media/again.pdf', big);
      const served = await getBytes(second.hp, second.site, '/media/again.pdf', { range: 'bytes=5-' });
      expect(served.body.equals(big.subarray(5))).toBe(true);
      expect(second.counting.readsOf(hash)).toBe(0);
      expect((await bytes()) - base).toBe(big.length);
    },
  );

  it('leaves nothing under the final name when the blob store breaks midway, and fills again', async () => {
    const { hp, site, counting, dir } = shared;
    const big = randomBytes(3 * MiB);
    const hash = sha256(big);
    await uploadBinary(hp, site, 'media/broken.pdf', big);

    counting.failNext = `blobs/${hash}`;
    const broken = await getBytes(hp, site, '/media/broken.pdf').then(
      ({ body }) => body.length,
      () => -1,
    );
    expect(broken).not.toBe(big.length);
    await eventually('the failed fill cleaned up', async () => {
      const folder = await cacheFolder(dir);
      return !folder.blobs.includes(hash) && folder.others.length === 0;
    });
    expect(existsSync(path.join(dir, hash))).toBe(false);

    const whole = await getBytes(hp, site, '/media/broken.pdf');
    expect(sha256(whole.body)).toBe(hash);
    await holds(dir, [hash]);
    expect(counting.readsOf(hash)).toBe(2);
  });

  it('finishes a fill whose client went away, so the next request reads the file', async () => {
    const { hp, site, counting, dir } = shared;
    const big = randomBytes(5 * MiB);
    const hash = sha256(big);
    await uploadBinary(hp, site, 'media/left.pdf', big);

    await new Promise<void>((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port: hp.port, path: '/media/left.pdf', headers: { host: hostOf(site) } },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    });
    await eventually('the fill completed', async () => (await cacheFolder(dir)).blobs.includes(hash));
    expect((await readFile(path.join(dir, hash))).equals(big)).toBe(true);
    expect(sha256((await getBytes(hp, site, '/media/left.pdf')).body)).toBe(hash);
    expect(counting.readsOf(hash)).toBe(1);
  });

  it(
    'serves from the blob store every time when HOSTPLANE_EDGE_DISK_CACHE_MB=0',
    { timeout: 90_000 },
    async () => {
      const dir = await freshDir();
      await mkdir(dir, { recursive: true });
      const { hp, site, counting } = await start({
        HOSTPLANE_EDGE_DISK_CACHE_MB: '0',
        HOSTPLANE_EDGE_DISK_CACHE_DIR: dir,
      });
      const big = randomBytes(2 * MiB);
      await uploadBinary(hp, site, 'media/off.pdf', big);
      for (let i = 0; i < 2; i++)
        expect((await getBytes(hp, site, '/media/off.pdf')).body.equals(big)).toBe(true);
      expect(counting.readsOf(sha256(big))).toBe(2);
      expect(await readdir(dir)).toEqual([]);
    },
  );
});
