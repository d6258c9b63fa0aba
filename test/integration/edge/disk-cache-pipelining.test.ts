import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPEN_FILES_MAX } from '../../../src/edge/disk-handles.js';
import { READ_BUFFER_BYTES, READ_POOL_MAX_BYTES } from '../../../src/edge/file-pump.js';
import { eventually } from '../../support/eventually.js';
import { openFilesUnder } from '../../support/open-files.js';
import {
  metricValue,
  rawRequest,
  scrapeMetrics,
  startHostplane,
  uploadBinary,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

// Several HTTP/1.1 requests written at once on one connection (pipelining): node:http answers
// them in order, the later responses queued behind the first until it is done. Files of the disk
// cache sent to such responses must give back their read buffers and open files whatever happens
// to the connection: all answers read, or the client gone while some are still queued.

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** "Not yet", quoting what was seen (eventually() shows the last one when it gives up). */
const notYet = (seen: object): never => {
  throw new Error(JSON.stringify(seen));
};

interface Answer {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

/**
 * Writes the requests at once on one socket and reads as many answers (those of HEAD requests and
 * 304s have a head only), then ends the connection.
 */
function pipelined(
  hp: TestHostplane,
  requests: Array<{ method?: string; path: string; headers?: Record<string, string> }>,
  host: string,
): Promise<Answer[]> {
  return new Promise<Answer[]>((resolve, reject) => {
    const socket = net.connect(hp.port, '127.0.0.1');
    const answers: Answer[] = [];
    let pending = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('connect', () => {
      socket.write(
        requests
          .map(({ method = 'GET', path: p, headers = {} }) => {
            const lines = [`${method} ${p} HTTP/1.1`, `Host: ${host}`];
            for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
            return `${lines.join('\r\n')}\r\n\r\n`;
          })
          .join(''),
      );
    });
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const i = answers.length;
        if (i === requests.length) break;
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) break;
        const [statusLine, ...lines] = pending.subarray(0, end).toString('latin1').split('\r\n');
        const headers = new Map(
          lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
        );
        const status = Number(statusLine!.split(' ')[1]);
        const bodyless = requests[i]!.method === 'HEAD' || status === 304;
        const length = bodyless ? 0 : Number(headers.get('content-length') ?? 0);
        if (pending.length < end + 4 + length) break;
        answers.push({ status, headers, body: pending.subarray(end + 4, end + 4 + length) });
        pending = pending.subarray(end + 4 + length);
      }
      if (answers.length === requests.length) {
        socket.end();
        resolve(answers);
      }
    });
  });
}

describe('the edge disk cache under pipelined requests', () => {
  let hp: TestHostplane;
  let site: TestSite;
  let dir: string;
  let host: string;
  const blobs: Array<{ name: string; bytes: Buffer }> = [];

  /** Every read buffer and open file given back, and the idle ones within their caps. */
  const settled = () =>
    eventually(
      'the server has let go of every buffer and file of the disk cache',
      async () => {
        const metrics = await scrapeMetrics(hp);
        const sample = (name: string, state: string) => metricValue(metrics, name, { state });
        const files = 'hostplane_edge_disk_cache_open_files';
        const buffers = 'hostplane_edge_read_buffer_bytes';
        const state = {
          filesInUse: sample(files, 'in_use'),
          filesIdle: sample(files, 'idle'),
          buffersInUse: sample(buffers, 'in_use'),
          buffersIdle: sample(buffers, 'idle'),
          open: openFilesUnder(dir).length,
        };
        return state.filesInUse === 0 &&
          state.buffersInUse === 0 &&
          state.filesIdle <= Math.min(OPEN_FILES_MAX, blobs.length) &&
          state.buffersIdle <= READ_POOL_MAX_BYTES &&
          // One descriptor per blob at most stays open between requests.
          state.open <= blobs.length
          ? state
          : notYet(state);
      },
      10_000,
    );

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    site = await hp.createSite('pipelined');
    host = `${site.slug}.localhost:8080`;
    dir = path.join(hp.dataDir, 'edge-cache');
    for (let i = 0; i < 4; i++) {
      const bytes = randomBytes(2 * MiB + 1 + i * 311_111);
      const name = `/media/p${i}.pdf`;
      await uploadBinary(hp, site, name.slice(1), bytes);
      blobs.push({ name, bytes });
      const first = await rawRequest(hp.port, name, { headers: { host } });
      expect(sha256(Buffer.from(await first.arrayBuffer()))).toBe(sha256(bytes));
    }
    await eventually('the blobs are on disk', () =>
      blobs.every(({ bytes }) => readdirSync(dir).includes(sha256(bytes))),
    );
  });
  afterAll(() => hp?.stop());

  it('answers pipelined GETs of cached files in order and gives back every buffer and file', async () => {
    const order = [0, 1, 2, 3, 1, 0];
    const answers = await pipelined(
      hp,
      order.map((i) => ({ path: blobs[i]!.name })),
      host,
    );
    expect(answers.map((a) => [a.status, sha256(a.body)])).toEqual(
      order.map((i) => [200, sha256(blobs[i]!.bytes)]),
    );
    await settled();
  });

  it('answers a pipelined mix of HEAD, Range, 304 and GET and gives back every buffer and file', async () => {
    const [a, b, c] = blobs as [(typeof blobs)[0], (typeof blobs)[0], (typeof blobs)[0]];
    const etag = (await rawRequest(hp.port, a.name, { method: 'HEAD', headers: { host } })).headers.get(
      'etag',
    )!;
    const answers = await pipelined(
      hp,
      [
        { method: 'HEAD', path: a.name },
        { path: b.name, headers: { range: 'bytes=1000-1700000' } },
        { path: a.name, headers: { 'if-none-match': etag } },
        { method: 'HEAD', path: c.name, headers: { range: 'bytes=5-9' } },
        { path: c.name },
        { path: a.name, headers: { range: `bytes=-${MiB + 3}` } },
      ],
      host,
    );
    expect(answers.map((x) => x.status)).toEqual([200, 206, 304, 206, 200, 206]);
    expect(answers[0]!.headers.get('content-length')).toBe(String(a.bytes.length));
    expect(sha256(answers[1]!.body)).toBe(sha256(b.bytes.subarray(1000, 1_700_001)));
    expect(sha256(answers[4]!.body)).toBe(sha256(c.bytes));
    expect(sha256(answers[5]!.body)).toBe(sha256(a.bytes.subarray(a.bytes.length - MiB - 3)));
    await settled();
  });

  it('gives back every buffer and file when the client leaves with pipelined answers still queued', async () => {
    const socket = net.connect(hp.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.on('connect', () =>
      socket.write(
        [...blobs, ...blobs].map(({ name }) => `GET ${name} HTTP/1.1\r\nHost: ${host}\r\n\r\n`).join(''),
      ),
    );
    // Some of the first answer's bytes, then no more reading: the later answers stay queued.
    await new Promise<void>((resolve) =>
      socket.once('data', () => {
        socket.pause();
        resolve();
      }),
    );
    // Every blob's file is held for some answer: the queued answers have reached the disk cache.
    const files = 'hostplane_edge_disk_cache_open_files';
    const metrics = await eventually('every blob is being answered', async () => {
      const text = await scrapeMetrics(hp);
      return metricValue(text, files, { state: 'in_use' }) === blobs.length && text;
    });
    socket.destroy();
    await settled();
    // While the client waited, only the answer on the wire read into buffers (two at most): the
    // queued ones waited their turn.
    expect(metricValue(metrics, 'hostplane_edge_read_buffer_bytes', { state: 'in_use' })).toBeLessThanOrEqual(
      2 * READ_BUFFER_BYTES,
    );
  });

  it('gives back every buffer and file when the client leaves in the middle of a large answer', async () => {
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(hp.port, '127.0.0.1');
      socket.on('error', reject);
      socket.on('connect', () => socket.write(`GET ${blobs[3]!.name} HTTP/1.1\r\nHost: ${host}\r\n\r\n`));
      let got = 0;
      socket.on('data', (chunk: Buffer) => {
        got += chunk.length;
        if (got > MiB) {
          socket.destroy();
          resolve();
        }
      });
    });
    await settled();
    // The pool still serves whole files right.
    const again = await pipelined(hp, [{ path: blobs[3]!.name }], host);
    expect(sha256(again[0]!.body)).toBe(sha256(blobs[3]!.bytes));
  });
});
