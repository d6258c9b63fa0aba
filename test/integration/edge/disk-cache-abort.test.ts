import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type { BlobObject, BlobStore, ByteRange } from '../../../src/blob/index.js';
import { eventually } from '../../support/eventually.js';
import { openFilesUnder } from '../../support/open-files.js';
import { startHostplane, uploadBinary, type TestHostplane } from '../../support/hostplane.js';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('the edge disk cache: a client gone while its fill starts', () => {
  let hp: TestHostplane;
  afterAll(() => hp?.stop());

  it('leaves no file handle of the disk cache open', async () => {
    let gate: (() => void) | undefined;
    let asked: (() => void) | undefined;
    const askedP = new Promise<void>((r) => (asked = r));
    let target = '';
    const wrap = (inner: BlobStore): BlobStore =>
      Object.assign(Object.create(inner) as BlobStore, {
        kind: inner.kind,
        get: async (key: string, range?: ByteRange): Promise<BlobObject | undefined> => {
          if (key === `blobs/${target}`) {
            asked?.();
            await new Promise<void>((r) => (gate = r));
          }
          return inner.get(key, range);
        },
      });
    hp = await startHostplane('pglite+fs', { wrapBlobs: wrap });
    const site = await hp.createSite('abort-fill');
    const bytes = randomBytes(3 * 1024 * 1024);
    await uploadBinary(hp, site, 'big.pdf', bytes);
    target = sha256(bytes);
    const dir = path.join(hp.dataDir, 'edge-cache');
    const before = openFilesUnder(dir).length;

    const req = http.request({
      port: hp.port,
      path: '/big.pdf',
      headers: { host: `${site.slug}.localhost:8080` },
    });
    req.on('error', () => undefined);
    req.end();
    await askedP;
    req.destroy();
    await delay(300); // the server sees the socket close
    gate!();
    await eventually('the blob is cached', () => readdirSync(dir).includes(target));
    await delay(500);
    const open = openFilesUnder(dir);
    console.log('fds into the cache dir', before, open);
    expect(open.length).toBe(before);
  });
});
