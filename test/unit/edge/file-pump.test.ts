import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BufferPool, pumpFile } from '../../../src/edge/file-pump.js';
import { eventually } from '../../support/eventually.js';

// The pump on a real socket: a read error ends the answer and releases the file exactly once,
// a client that leaves does too, and every buffer comes back to the pool.

const dir = mkdtempSync(path.join(os.tmpdir(), 'hostplane-pump-'));
const bytes = randomBytes(3 * 1024 * 1024 + 17);
const file = path.join(dir, 'blob');
writeFileSync(file, bytes);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A server whose one answer is pumped from `fd`; resolves with what the client saw and the release count. */
async function serve(fd: number, pool: BufferPool, leaveAfterFirstChunk = false) {
  let releases = 0;
  let pumped: Promise<void> | undefined;
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Length': String(bytes.length) });
    pumped = pumpFile({ fd, start: 0, end: bytes.length - 1, release: () => (releases += 1) }, res, pool);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const seen = await new Promise<{ received: number; aborted: boolean }>((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, agent: false }, (res) => {
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (leaveAfterFirstChunk) {
          req.destroy();
          resolve({ received, aborted: true });
        }
      });
      res.on('end', () => resolve({ received, aborted: false }));
      res.on('error', () => resolve({ received, aborted: true }));
    });
    req.on('error', () => resolve({ received: 0, aborted: true }));
  });
  await pumped;
  await new Promise((r) => server.close(r));
  return { ...seen, releases };
}

describe('pumpFile', () => {
  it('sends the whole file and releases it once', async () => {
    const fd = openSync(file, 'r');
    const pool = new BufferPool(64 * 1024, 256 * 1024);
    const seen = await serve(fd, pool);
    closeSync(fd);
    expect(seen).toEqual({ received: bytes.length, aborted: false, releases: 1 });
    expect(pool.inUse).toBe(0);
  });

  it('ends the answer on a read error and releases the file once', async () => {
    const fd = openSync(dir, 'r'); // reading a directory fails (EISDIR)
    const pool = new BufferPool(64 * 1024, 256 * 1024);
    const seen = await serve(fd, pool);
    closeSync(fd);
    expect(seen.aborted).toBe(true);
    expect(seen.releases).toBe(1);
    expect(pool.inUse).toBe(0);
  });

  it('stops when the client leaves, releases the file once and gets every buffer back', async () => {
    const fd = openSync(file, 'r');
    const pool = new BufferPool(64 * 1024, 256 * 1024);
    const seen = await serve(fd, pool, true);
    closeSync(fd);
    expect(seen.aborted).toBe(true);
    expect(seen.received).toBeLessThan(bytes.length);
    expect(seen.releases).toBe(1);
    // Writes still on the socket when it closed call back with an error.
    await eventually('every buffer back', () => pool.inUse === 0);
    expect(pool.idleBytes).toBeLessThanOrEqual(256 * 1024);
  });
});
