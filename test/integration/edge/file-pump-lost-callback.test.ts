import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferPool, pumpFile, READ_BUFFER_BYTES } from '../../../src/edge/file-pump.js';
import { eventually } from '../../support/eventually.js';

// node:http drops the callback of a write made when the connection goes at the wrong moment (the
// socket destroyed before the response hears of it, a response still waiting for its socket). The
// pump gives a buffer back to its pool only from that callback: one that never comes must not
// leave the buffer counted in use for good. A real server, socket and file; the one thing made up
// is the lost callback, dropped from one write the way node:http drops it.

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('the disk-cache file pump when a write callback never comes', () => {
  let dir: string;
  let file: string;
  const bytes = randomBytes(5 * READ_BUFFER_BYTES + 12_345);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-pump-'));
    file = path.join(dir, 'blob');
    writeFileSync(file, bytes);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('counts the buffer out of use once the answer is over, and never gives it back to the pool', async () => {
    const pool = new BufferPool(READ_BUFFER_BYTES, 64 * READ_BUFFER_BYTES);
    let lost: Buffer | undefined;
    let pumped: Promise<void> | undefined;
    const server = http.createServer((_req, res) => {
      // The second write's callback is lost (its bytes still go out).
      const write = res.write.bind(res) as (chunk: Buffer, cb?: () => void) => boolean;
      let writes = 0;
      const dropping = (chunk: Buffer, cb?: () => void): boolean => {
        writes += 1;
        if (writes !== 2) return write(chunk, cb);
        lost = chunk;
        return write(chunk);
      };
      res.write = dropping as ServerResponse['write'];
      res.writeHead(200, { 'content-length': bytes.length });
      const fd = openSync(file, 'r');
      pumped = pumpFile({ fd, start: 0, end: bytes.length - 1, release: () => closeSync(fd) }, res, pool);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const body = await fetch(`http://127.0.0.1:${port}/`).then(async (r) =>
        Buffer.from(await r.arrayBuffer()),
      );
      expect(sha256(body)).toBe(sha256(bytes));
      await eventually('the pump is over', () => pumped !== undefined);
      await pumped;
      expect(lost).toBeDefined();
      expect(pool.inUse).toBe(0);
      // The buffer behind the lost write is not reused: it may still be referenced.
      const taken = Array.from({ length: 8 }, () => pool.take());
      expect(taken.some((b) => b.buffer === lost!.buffer)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
