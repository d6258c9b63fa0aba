import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeployApi, retryAfterMs } from '../../../src/cli/deploy/api.js';
import type { ManifestFile } from '../../../src/cli/deploy/hash.js';
import { BULK_FILE_MAX_BYTES } from '../../../src/cli/deploy/bulk.js';
import { uploadAll } from '../../../src/cli/deploy/upload.js';
import { ApiUnavailable } from '../../../src/cli/errors.js';

// The upload pool's pacing of its PUTs (files over 1 MB; smaller ones go in bulk requests) against a
// loopback server that admits `cap` uploads at once and answers 429 (Retry-After: 0) beyond, as
// the server's per-site share of the upload byte budget does.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** Each file's content: over BULK_FILE_MAX_BYTES, so each goes by its own PUT (small ones go in bulk). */
const contentOf = (i: number) => `<p>${i}</p>`.padEnd(BULK_FILE_MAX_BYTES + 1, ' ');

async function files(n: number): Promise<ManifestFile[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-upload-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const out: ManifestFile[] = [];
  for (let i = 0; i < n; i++) {
    const absPath = path.join(dir, `f${i}.html`);
    await writeFile(absPath, contentOf(i));
    const hash = i.toString(16).padStart(64, '0');
    out.push({ relPath: `f${i}.html`, sitePath: `f${i}.html`, absPath, size: contentOf(i).length, hash });
  }
  return out;
}

/**
 * Admits `cap` PUTs at once. The first admitted ones are held until `holdUntilRefused` refusals
 * have been sent, so the pool's first burst meets the cap on every run (no timing involved); later
 * ones answer at once.
 */
async function cappedServer(cap: number, holdUntilRefused = 1, refuseAlways = false) {
  let inFlight = 0;
  let maxInFlight = 0;
  let refused = 0;
  const stored = new Map<string, string>();
  const held: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (refuseAlways || inFlight >= cap) {
        refused++;
        res.writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'Too Many Requests', message: `At most ${cap} at a time` }));
        if (refused >= holdUntilRefused) for (const release of held.splice(0)) release();
        return;
      }
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const answer = () => {
        inFlight--;
        stored.set(req.url!.split('/').pop()!, Buffer.concat(chunks).toString());
        res.end(JSON.stringify({ success: true }));
      };
      if (refused < holdUntilRefused) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const api = new DeployApi({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    apiKey: 'k',
  });
  return { api, stored, maxInFlight: () => maxInFlight, refused: () => refused };
}

describe('uploadAll', () => {
  it('paces itself down to the uploads the server admits and uploads every file once', async () => {
    // 6 at once meet a cap of 2: the 4 refused shrink the window one by one (6 → 5 → 4 → 3 → 2).
    const server = await cappedServer(2, 4);
    const plan = await files(12);
    const uploaded: string[] = [];
    const paced: number[] = [];
    const result = await uploadAll(server.api, 'abcdefghijkl', { files: plan, bytes: 0 }, 6, {
      uploaded: (f) => uploaded.push(f.hash),
      paced: (w) => paced.push(w),
    });
    expect(paced).toEqual([5, 4, 3, 2]);
    expect(result.window).toBe(2);
    // Paced to the cap, it was never refused again.
    expect(server.refused()).toBe(4);
    expect(server.maxInFlight()).toBe(2);
    expect(uploaded.sort()).toEqual(plan.map((f) => f.hash).sort());
    for (const f of plan) expect(server.stored.get(f.hash)).toBe(contentOf(Number.parseInt(f.hash, 16)));
  });

  it('gives up on a file the server keeps refusing (ApiUnavailable: exit 5)', async () => {
    const server = await cappedServer(0, 1, true);
    const plan = await files(1);
    await expect(
      uploadAll(server.api, 'abcdefghijkl', { files: plan, bytes: 0 }, 2, {
        uploaded: () => undefined,
        paced: () => undefined,
      }),
    ).rejects.toThrow(ApiUnavailable);
    expect(server.refused()).toBe(21);
  });
});

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates; nothing readable is undefined', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs('0')).toBe(0);
    expect(retryAfterMs(null)).toBeUndefined();
    expect(retryAfterMs('soon')).toBeUndefined();
    const inAMinute = new Date(Date.now() + 60_000).toUTCString();
    expect(retryAfterMs(inAMinute)).toBeGreaterThan(55_000);
  });
});
