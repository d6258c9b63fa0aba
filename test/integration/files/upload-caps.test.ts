import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Readable } from 'node:stream';
import type { BlobStore } from '../../../src/blob/index.js';
import { eventually } from '../../support/eventually.js';
import {
  apiKeyHeader,
  backends,
  multipartBody,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { slowRequest } from '../../support/slow-client.js';

/**
 * Holds every blob write of the server until `open()`: uploads stay in flight, deterministically,
 * for as long as a test needs. `held(n)` resolves once n writes are waiting.
 */
function blobGate() {
  let opened = false;
  const release: (() => void)[] = [];
  const watchers: { n: number; resolve: () => void }[] = [];
  const wrap = (real: BlobStore): BlobStore =>
    new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'put' || opened) return Reflect.get(target, prop, receiver);
        return async (key: string, body: Buffer) => {
          if (!opened) {
            await new Promise<void>((resolve) => {
              release.push(resolve);
              for (const w of watchers) if (release.length >= w.n) w.resolve();
            });
          }
          await target.put(key, body);
        };
      },
    });
  return {
    wrap,
    held: (n: number) =>
      new Promise<void>((resolve) => {
        if (release.length >= n) resolve();
        else watchers.push({ n, resolve });
      }),
    open() {
      opened = true;
      for (const r of release.splice(0)) r();
    },
  };
}

/** A JSON upload body of exactly `bytes` bytes (what its Content-Length says). */
const bodyOfLength = (path: string, bytes: number) => {
  const frame = JSON.stringify({ path, content: '' }).length;
  return JSON.stringify({ path, content: 'x'.repeat(bytes - frame) });
};

describe.each(backends)('upload byte budget (%s)', (backend) => {
  let hp: TestHostplane;
  let a: TestSite;
  let b: TestSite;
  let c: TestSite;
  const gate = blobGate();
  beforeAll(async () => {
    hp = await startHostplane(backend, {
      wrapBlobs: gate.wrap,
      env: { HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '12', HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '6' },
    });
    [a, b, c] = await Promise.all([hp.createSite('cap-a'), hp.createSite('cap-b'), hp.createSite('cap-c')]);
  });
  afterAll(() => hp?.stop());

  const MiB = 1024 * 1024;
  const upload = (site: TestSite, path: string, content: string) =>
    hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: apiKeyHeader(site),
      json: { path, content },
    });
  // 1.5 MiB of JSON takes the direct reader, which holds it twice: it costs 3 MiB of the budget.
  const large = (site: TestSite, path: string) =>
    hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: { ...apiKeyHeader(site), 'content-type': 'application/json' },
      body: bodyOfLength(path, 1.5 * MiB),
    });
  const exists = async (site: TestSite, path: string) =>
    (await hp.services.files.find(site.siteId, path)) !== undefined;

  it('refuses uploads beyond a site’s share and the process budget, before reading the body, and admits again once they finish', async () => {
    // Two large uploads to site a, held in flight at their blob write: its 6 MiB share.
    const first = [large(a, 'one.html'), large(a, 'two.html')];
    await gate.held(2);

    // Even a small one more to the same site: 429 with Retry-After, nothing stored.
    const perSite = await upload(a, 'three.html', 'three');
    expect(perSite.status).toBe(429);
    expect(Number(perSite.headers.get('retry-after'))).toBeGreaterThan(0);
    const perSiteBody = (await perSite.json()) as Record<string, unknown>;
    expect(perSiteBody).toMatchObject({ error: 'Too Many Requests', retry_after: expect.any(Number) });
    expect(perSiteBody.message).toBe(
      "This site's uploads in flight already hold 6 MB of at most 6 MB at a time; wait for one to finish.",
    );
    expect(await exists(a, 'three.html')).toBe(false);

    // Another site still gets in (the other half of the budget) …
    const other = [large(b, 'b1.html'), large(b, 'b2.html')];
    await gate.held(4);

    // … and now the budget is spent: 503 with Retry-After, for any site and for videos too.
    const full = await upload(c, 'c.html', 'c');
    expect(full.status).toBe(503);
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await full.json()).toMatchObject({
      error: 'Service Unavailable',
      retry_after: expect.any(Number),
    });
    const form = new FormData();
    form.append('path', 'clip.mp4');
    form.append('file', new Blob([Buffer.from('not really a video')]), 'clip.mp4');
    const video = await hp.request('/api/v1/videos/upload', {
      method: 'POST',
      headers: apiKeyHeader(c),
      form,
    });
    expect(video.status).toBe(503);
    expect(await exists(c, 'c.html')).toBe(false);

    // The refusal comes before the body is read: a body over the 15 MB parser limit (which would
    // be a 400 "File too large" once read) is still answered 503.
    const huge = await hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: { ...apiKeyHeader(c), 'content-type': 'application/json' },
      body: JSON.stringify({ path: 'huge.txt', content: 'x'.repeat(16 * 1024 * 1024) }),
    });
    expect(huge.status).toBe(503);

    // Once the uploads in flight finish, their bytes are free again.
    gate.open();
    for (const res of await Promise.all([...first, ...other])) expect(res.status).toBe(200);
    expect((await upload(a, 'three.html', 'three')).status).toBe(200);
    expect((await upload(c, 'c.html', 'c')).status).toBe(200);
  });
});

/** An upload body of `size` bytes of content, sent by a slow client (see slowRequest). */
const uploadJson = (path: string, size: number) => JSON.stringify({ path, content: 'x'.repeat(size) });

/** A gauge or counter sample from /metrics (0 when absent). */
async function metric(hp: TestHostplane, sample: string): Promise<number> {
  const text = await (await fetch(`${hp.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : 0;
}

describe.each(backends)('upload body deadline (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    // A budget of 1 MiB, which one large body takes whole: bytes a slow body kept would refuse the
    // next upload.
    hp = await startHostplane(backend, {
      env: {
        HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '1',
        HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: undefined,
        HOSTPLANE_BODY_TIMEOUT_SECONDS: '1',
        HOSTPLANE_BODY_MIN_RATE: '1024',
      },
    });
    site = await hp.createSite('deadline');
  });
  afterAll(() => hp?.stop());

  const uploadNow = (path: string) =>
    hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: apiKeyHeader(site),
      json: { path, content: path },
    });

  it('answers a trickling upload 408 after the window, closes it and frees its bytes at once', async () => {
    const before = await metric(hp, 'hostplane_http_body_timeouts_total{reason="slow"}');
    const trickle = slowRequest(hp.port, {
      path: '/api/v1/files/upload',
      headers: { ...apiKeyHeader(site), 'content-type': 'application/json' },
      body: uploadJson('trickled.txt', 300_000), // costs more than the whole budget: takes it all
      sendFirst: 20,
      everyMs: 100, // 10 bytes a second, under 1024
    });
    await eventually(
      'the upload holds the budget',
      async () => (await metric(hp, 'hostplane_uploads_in_flight_bytes')) === 1024 * 1024,
    );
    expect((await uploadNow('refused.txt')).status).toBe(429);

    const answer = await trickle.answer;
    expect(answer.status).toBe(408);
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.body)).toEqual({
      error: 'Request Timeout',
      message: 'The request body arrived slower than 1024 bytes a second over 1 s.',
    });
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(1000);
    expect(answer.elapsedMs).toBeLessThan(5000);
    expect(await metric(hp, 'hostplane_http_body_timeouts_total{reason="slow"}')).toBe(before + 1);
    expect(await metric(hp, 'hostplane_uploads_in_flight_bytes')).toBe(0);

    expect((await uploadNow('next.txt')).status).toBe(200);
    expect(await hp.services.files.find(site.siteId, 'trickled.txt')).toBeUndefined();
  });

  it('answers a stalled upload 408 (no byte for a window)', async () => {
    const stalled = slowRequest(hp.port, {
      path: '/api/v1/files/upload',
      headers: { ...apiKeyHeader(site), 'content-type': 'application/json' },
      body: uploadJson('stalled.txt', 2_000_000), // the direct reader of large bodies
      sendFirst: 100_000,
    });
    const answer = await stalled.answer;
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({
      error: 'Request Timeout',
      message: 'No part of the request body arrived for 1 s.',
    });
    expect((await uploadNow('after-stall.txt')).status).toBe(200);
  });

  it('does not cut a slow body that keeps above the minimum rate', async () => {
    const steady = slowRequest(hp.port, {
      path: '/api/v1/files/upload',
      headers: { ...apiKeyHeader(site), 'content-type': 'application/json' },
      body: uploadJson('steady.txt', 10_000),
      sendFirst: 0,
      everyMs: 100,
      chunkBytes: 400, // 4000 bytes a second, for 2.5 s
    });
    const answer = await steady.answer;
    expect(answer.status).toBe(200);
    expect(answer.elapsedMs).toBeGreaterThan(2000);
  });

  it('answers a trickling video upload 408, frees its bytes and stores nothing', async () => {
    const form = new FormData();
    form.append('path', 'clip.mp4');
    form.append('file', new Blob([new Uint8Array(200_000)], { type: 'video/mp4' }), 'clip.mp4');
    const encoded = multipartBody(form);
    const trickle = slowRequest(hp.port, {
      path: '/api/v1/videos/upload',
      headers: { ...apiKeyHeader(site), 'content-type': encoded.contentType },
      body: Buffer.from(await encoded.bytes()),
      sendFirst: 100_000,
      everyMs: 100,
    });
    const answer = await trickle.answer;
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'Request Timeout' });
    expect((await uploadNow('after-video.txt')).status).toBe(200);
    await eventually(
      'no bytes held',
      async () => (await metric(hp, 'hostplane_uploads_in_flight_bytes')) === 0,
    );
    expect(await metric(hp, 'hostplane_uploads_in_flight')).toBe(0);
    expect(await hp.services.files.find(site.siteId, 'clip.mp4')).toBeUndefined();
    // The reader learns the request is over: its staged bytes are dropped, not left half-written.
    await eventually('no staged blob left', async () => {
      const staged: unknown[] = [];
      for await (const blob of hp.services.blobs.list('tmp/')) staged.push(blob);
      return staged.length === 0;
    });
  });
});

describe.each(backends)('body deadline while the server is the slow one (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  let release: () => void = () => undefined;
  let held: () => void = () => undefined;
  const streamHeld = new Promise<void>((resolve) => (held = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  beforeAll(async () => {
    hp = await startHostplane(backend, {
      // The blob store takes no byte of the video until the gate opens: the server stops reading.
      wrapBlobs: (real) =>
        new Proxy(real, {
          get(target, prop, receiver) {
            if (prop !== 'putStream') return Reflect.get(target, prop, receiver);
            return async (key: string, body: Readable) => {
              held();
              await gate;
              return target.putStream(key, body);
            };
          },
        }),
      env: { HOSTPLANE_BODY_TIMEOUT_SECONDS: '1', HOSTPLANE_BODY_MIN_RATE: '1024' },
    });
    site = await hp.createSite('backpressure');
  });
  afterAll(() => hp?.stop());

  it('does not count time the server itself is not reading (a paused pipe) against the body', async () => {
    const form = new FormData();
    form.append('path', 'big.mp4');
    form.append('file', new Blob([new Uint8Array(8 * 1024 * 1024)], { type: 'video/mp4' }), 'big.mp4');
    const response = hp.request('/api/v1/videos/upload', {
      method: 'POST',
      headers: apiKeyHeader(site),
      form,
    });
    await streamHeld;
    // Time passing is what is tested here (three windows while the store holds the stream), not an order of events.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    release();
    const res = await response;
    expect(res.status).toBe(200);
    expect(await hp.services.files.find(site.siteId, 'big.mp4')).toBeDefined();
  });
});
