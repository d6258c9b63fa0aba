import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READ_BUFFER_BYTES, READ_POOL_MAX_BYTES, readPool } from '../../../src/edge/file-pump.js';
import { eventually } from '../../support/eventually.js';
import { openFilesUnder } from '../../support/open-files.js';
import {
  metricValue,
  scrapeMetrics,
  startHostplane,
  uploadBinary,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

// Files of the disk cache go out through a small pool of reused read buffers: a buffer goes back
// to the pool only once the socket is done with it, so many responses at once, slow readers among
// them, each get exactly their own bytes; clients that leave mid-stream leave no file open and
// every buffer back; many requests reuse the same few buffers.

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Got {
  status: number;
  hash: string;
  length: number;
}

/**
 * GET with a raw client; `slow` reads one chunk per timer tick (the server's socket fills and its
 * writes wait on the kernel, the case where a buffer reused too early would be overwritten).
 */
function get(hp: TestHostplane, site: TestSite, urlPath: string, range?: string, slow = false) {
  return new Promise<Got>((resolve, reject) => {
    const req = http.get(
      {
        host: '127.0.0.1',
        port: hp.port,
        path: urlPath,
        agent: false,
        headers: { host: `${site.slug}.localhost:8080`, ...(range ? { range } : {}) },
      },
      (res) => {
        const hasher = createHash('sha256');
        let length = 0;
        res.on('data', (chunk: Buffer) => {
          hasher.update(chunk);
          length += chunk.length;
          if (slow) {
            res.pause();
            setTimeout(() => res.resume(), 1);
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, hash: hasher.digest('hex'), length }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}

describe('the edge disk cache sends files through a pool of reused buffers', () => {
  let hp: TestHostplane;
  let site: TestSite;
  let dir: string;
  /** Distinct random blobs of odd sizes, cached on disk by a first GET. */
  const blobs: Array<{ name: string; bytes: Buffer }> = [];

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    site = await hp.createSite('pump');
    dir = path.join(hp.dataDir, 'edge-cache');
    for (let i = 0; i < 6; i++) {
      const bytes = randomBytes(2 * MiB + 1 + i * 377_777);
      const name = `/media/v${i}.pdf`;
      await uploadBinary(hp, site, name.slice(1), bytes);
      blobs.push({ name, bytes });
      const first = await get(hp, site, name);
      expect(first.hash).toBe(sha256(bytes));
    }
    await eventually('the blobs are on disk', () =>
      blobs.every(({ bytes }) => readdirSync(dir).includes(sha256(bytes))),
    );
  });
  afterAll(() => hp?.stop());

  it('answers many concurrent whole and ranged requests of different blobs each with its own bytes', async () => {
    const B = READ_BUFFER_BYTES;
    const cases: Array<{ name: string; range?: string; want: Buffer; slow: boolean }> = [];
    for (let round = 0; round < 4; round++) {
      blobs.forEach(({ name, bytes }, i) => {
        const slow = (round + i) % 2 === 0;
        cases.push({ name, want: bytes, slow });
        // Odd offsets and lengths across the buffer boundaries, and a suffix.
        const start = B - 3 - i * 7 - round;
        const end = Math.min(bytes.length - 1, start + 2 * B + 11 + round * 101);
        cases.push({ name, range: `bytes=${start}-${end}`, want: bytes.subarray(start, end + 1), slow });
        const single = B * (1 + (i % 3)) + round;
        cases.push({
          name,
          range: `bytes=${single}-${single}`,
          want: bytes.subarray(single, single + 1),
          slow,
        });
        const tail = B + 1 + i;
        cases.push({ name, range: `bytes=-${tail}`, want: bytes.subarray(bytes.length - tail), slow: !slow });
      });
    }
    const got = await Promise.all(cases.map((c) => get(hp, site, c.name, c.range, c.slow)));
    const wrong = cases.flatMap((c, i) => {
      const g = got[i]!;
      const ok =
        g.status === (c.range ? 206 : 200) && g.length === c.want.length && g.hash === sha256(c.want);
      return ok
        ? []
        : [`${c.name} ${c.range ?? 'whole'}${c.slow ? ' (slow)' : ''}: ${g.status}, ${g.length} bytes`];
    });
    expect(wrong).toEqual([]);
    await eventually('every buffer back in the pool', () => readPool.inUse === 0);
  });

  it('leaves no file open and every buffer back when clients leave mid-stream', async () => {
    const before = openFilesUnder(dir).length;
    await Promise.all(
      blobs.map(
        ({ name }) =>
          new Promise<void>((resolve) => {
            const req = http.get({
              host: '127.0.0.1',
              port: hp.port,
              path: name,
              agent: false,
              headers: { host: `${site.slug}.localhost:8080` },
            });
            req.on('response', (res) => {
              res.once('data', () => {
                req.destroy();
                resolve();
              });
            });
            req.on('error', () => undefined);
          }),
      ),
    );
    await eventually('the server has let go of the files and taken back its buffers', async () => {
      const metrics = await scrapeMetrics(hp);
      return (
        openFilesUnder(dir).length === before &&
        metricValue(metrics, 'hostplane_edge_disk_cache_open_files', { state: 'in_use' }) === 0 &&
        metricValue(metrics, 'hostplane_edge_read_buffer_bytes', { state: 'in_use' }) === 0
      );
    });
    // The pool still serves whole files right.
    const again = await get(hp, site, blobs[0]!.name);
    expect(again.hash).toBe(sha256(blobs[0]!.bytes));
  });

  it('keeps one open file per blob between requests', async () => {
    await Promise.all(blobs.map(({ name }) => get(hp, site, name, 'bytes=100-200')));
    await Promise.all(blobs.map(({ name }) => get(hp, site, name, 'bytes=300-400')));
    const open = openFilesUnder(dir);
    expect(open.sort()).toEqual(blobs.map(({ bytes }) => path.join(dir, sha256(bytes))).sort());
    const metrics = await scrapeMetrics(hp);
    expect(metricValue(metrics, 'hostplane_edge_disk_cache_open_files', { state: 'idle' })).toBe(
      blobs.length,
    );
  });

  it('reuses a few buffers over many requests: the pool stays within its cap', async () => {
    const allocated = readPool.allocated;
    for (let round = 0; round < 10; round++) {
      const got = await Promise.all(blobs.slice(0, 4).map(({ name }) => get(hp, site, name)));
      got.forEach((g, i) => expect(g.hash).toBe(sha256(blobs[i]!.bytes)));
    }
    // 40 responses of 2-3 MB (over 200 reads): at most two buffers per concurrent response are new.
    expect(readPool.allocated - allocated).toBeLessThanOrEqual(8);
    const metrics = await scrapeMetrics(hp);
    const idle = metricValue(metrics, 'hostplane_edge_read_buffer_bytes', { state: 'idle' });
    expect(idle).toBeGreaterThan(0);
    expect(idle).toBeLessThanOrEqual(READ_POOL_MAX_BYTES);
    expect(metricValue(metrics, 'hostplane_edge_read_buffer_bytes', { state: 'in_use' })).toBe(0);
  });
});

describe('the edge disk cache closes the open file of an evicted blob', () => {
  let hp: TestHostplane;
  afterAll(() => hp?.stop());

  it('when it is evicted', async () => {
    hp = await startHostplane('pglite+fs', { env: { HOSTPLANE_EDGE_DISK_CACHE_MB: '7' } });
    const site = await hp.createSite('pumpevict');
    const dir = path.join(hp.dataDir, 'edge-cache');
    const blobs = [0, 1, 2].map((i) => ({ name: `/e${i}.pdf`, bytes: randomBytes(3 * MiB + i) }));
    for (const { name, bytes } of blobs) await uploadBinary(hp, site, name.slice(1), bytes);
    const fileOf = (b: Buffer) => path.join(dir, sha256(b));
    // Twice each: the second read comes from the file (and keeps it open).
    for (const { name, bytes } of blobs.slice(0, 2)) {
      expect((await get(hp, site, name)).hash).toBe(sha256(bytes));
      await eventually('on disk', () => readdirSync(dir).includes(sha256(bytes)));
      expect((await get(hp, site, name)).hash).toBe(sha256(bytes));
    }
    expect(openFilesUnder(dir).sort()).toEqual([fileOf(blobs[0]!.bytes), fileOf(blobs[1]!.bytes)].sort());
    // The third fill evicts the first blob: its descriptor is closed, the second's kept.
    expect((await get(hp, site, blobs[2]!.name)).hash).toBe(sha256(blobs[2]!.bytes));
    await eventually('the evicted file closed', () => {
      const open = openFilesUnder(dir);
      return open.length === 1 && open[0] === fileOf(blobs[1]!.bytes);
    });
  });
});
