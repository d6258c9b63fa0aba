import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobStore } from '../../src/blob/index.js';
import {
  apiKeyHeader,
  backends,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../support/hostplane.js';

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

describe.each(backends)('upload concurrency caps (%s)', (backend) => {
  let hp: TestHostplane;
  let a: TestSite;
  let b: TestSite;
  let c: TestSite;
  const gate = blobGate();
  beforeAll(async () => {
    hp = await startHostplane(backend, {
      wrapBlobs: gate.wrap,
      env: { HOSTPLANE_UPLOADS_MAX_CONCURRENT: '3', HOSTPLANE_UPLOADS_MAX_PER_SITE: '2' },
    });
    [a, b, c] = await Promise.all([hp.createSite('cap-a'), hp.createSite('cap-b'), hp.createSite('cap-c')]);
  });
  afterAll(() => hp?.stop());

  const upload = (site: TestSite, path: string, content: string) =>
    hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: apiKeyHeader(site),
      json: { path, content },
    });
  const exists = async (site: TestSite, path: string) =>
    (await hp.services.files.find(site.siteId, path)) !== undefined;

  it('refuses uploads beyond the per-site and per-process caps, before reading the body, and admits again once they finish', async () => {
    // Two uploads to site a, held in flight at their blob write.
    const first = [upload(a, 'one.html', 'one'), upload(a, 'two.html', 'two')];
    await gate.held(2);

    // A third to the same site: 429 with Retry-After, nothing stored.
    const perSite = await upload(a, 'three.html', 'three');
    expect(perSite.status).toBe(429);
    expect(Number(perSite.headers.get('retry-after'))).toBeGreaterThan(0);
    const perSiteBody = (await perSite.json()) as Record<string, unknown>;
    expect(perSiteBody).toMatchObject({ error: 'Too Many Requests', retry_after: expect.any(Number) });
    expect(perSiteBody.message).toMatch(/at most 2 uploads to one site/i);
    expect(await exists(a, 'three.html')).toBe(false);

    // Another site still gets in (the third slot of the process) …
    const other = upload(b, 'b.html', 'b');
    await gate.held(3);

    // … and now the process is full: 503 with Retry-After, for any site and for videos too.
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

    // Once the uploads in flight finish, their slots are free again.
    gate.open();
    for (const res of await Promise.all([...first, other])) expect(res.status).toBe(200);
    expect((await upload(a, 'three.html', 'three')).status).toBe(200);
    expect((await upload(c, 'c.html', 'c')).status).toBe(200);
  });
});
