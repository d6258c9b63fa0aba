import { randomBytes } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plans } from '../../../src/platform/plans.js';
import {
  expectError,
  filesApi,
  fill,
  listAll,
  okJson,
  publicUrl,
  put,
  snapshot,
  storageLimits,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends, multipartBody, startHostplane, type TestHostplane } from '../../support/hostplane.js';

const MAX_VIDEO_BYTES = 52428800;

const keys = (value: object) => Object.keys(value).sort();

/** A multipart form with `path` first (unless `pathLast`) and the bytes in the `file` field. */
function videoForm(
  path: string | undefined,
  bytes: Uint8Array | undefined,
  options: { pathLast?: boolean; fileField?: string; filename?: string } = {},
): FormData {
  const form = new FormData();
  const addPath = () => path !== undefined && form.append('path', path);
  if (!options.pathLast) addPath();
  if (bytes !== undefined) {
    form.append(
      options.fileField ?? 'file',
      new Blob([new Uint8Array(bytes)], { type: 'video/mp4' }),
      options.filename ?? 'clip',
    );
  }
  if (options.pathLast) addPath();
  return form;
}

/** Temporary (staged) blobs left in the blob store; waits a little for asynchronous clean-up. */
async function leftoverTempBlobs(hp: TestHostplane): Promise<string[]> {
  let keysLeft: string[] = [];
  for (let attempt = 0; attempt < 40; attempt += 1) {
    keysLeft = [];
    for await (const blob of hp.services.blobs.list('tmp/')) keysLeft.push(blob.key);
    // The local store also writes through its own .tmp/ folder: an abandoned write must not stay there.
    if (hp.backend === 'pglite+fs') {
      const inFlight = await readdir(path.join(hp.dataDir, 'files', '.tmp')).catch(() => []);
      keysLeft.push(...inFlight.map((name) => `.tmp/${name}`));
    }
    if (keysLeft.length === 0) return keysLeft;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return keysLeft;
}

describe.each(backends)('video upload (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'video');
  const { freshSite } = fixture;

  describe('accepted uploads', () => {
    it('answers exactly {success, url, path, size, message}', async () => {
      const api = await freshSite();
      const bytes = randomBytes(5000);
      const body = await okJson(await api.video(videoForm('videos/intro.mp4', bytes)));
      expect(keys(body)).toEqual(['message', 'path', 'size', 'success', 'url']);
      expect(body).toMatchObject({
        success: true,
        path: 'videos/intro.mp4',
        size: 5000,
        url: publicUrl(api.site, 'videos/intro.mp4'),
      });
      expect(typeof body.message).toBe('string');
    });

    it('lists the video with its folder and counts it towards files and storage', async () => {
      const api = await freshSite();
      await put(api, 'index.html', 'x'.repeat(100));
      await okJson(await api.video(videoForm('videos/intro.mp4', randomBytes(7000))));
      const entries = await listAll(api);
      expect(entries.map((e) => [e.path, e.type, e.size])).toEqual([
        ['videos', 'folder', 0],
        ['index.html', 'file', 100],
        ['videos/intro.mp4', 'file', 7000],
      ]);
      const { usage } = await storageLimits(api);
      expect([usage.files.current, usage.storage.current]).toEqual([2, 7100]);
    });

    it('still works when the path field comes after the file part', async () => {
      const api = await freshSite();
      const bytes = randomBytes(4096);
      const body = await okJson(await api.video(videoForm('late/path.mp4', bytes, { pathLast: true })));
      expect(body).toMatchObject({ path: 'late/path.mp4', size: 4096 });
      const served = await api.serve('/late/path.mp4');
      expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
    });

    it('overwrites an earlier video at the same path, adjusting the bytes used', async () => {
      const api = await freshSite();
      await okJson(await api.video(videoForm('v.mp4', randomBytes(3000))));
      const second = randomBytes(1000);
      await okJson(await api.video(videoForm('v.mp4', second)));
      const { usage } = await storageLimits(api);
      expect([usage.files.current, usage.storage.current]).toEqual([1, 1000]);
      expect(Buffer.from(await (await api.serve('/v.mp4')).arrayBuffer()).equals(second)).toBe(true);
    });

    it.each([
      ['clip.mp4', 'video/mp4'],
      ['clip.MP4', 'video/mp4'],
      ['clip.mov', 'video/quicktime'],
      ['clip.webm', 'video/webm'],
      ['clip.ogg', 'video/ogg'],
    ])('accepts %s and serves it as %s', async (path, type) => {
      const api = await freshSite();
      await okJson(await api.video(videoForm(`media/${path}`, randomBytes(2048))));
      const res = await api.serve(`/media/${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
    });

    it('accepts exactly 52428800 bytes', async () => {
      const api = await freshSite();
      const bytes = Buffer.alloc(MAX_VIDEO_BYTES, 1);
      const body = await okJson(await api.video(videoForm('big.mp4', bytes)));
      expect(body.size).toBe(MAX_VIDEO_BYTES);
      expect((await storageLimits(api)).usage.storage.current).toBe(MAX_VIDEO_BYTES);
    });

    it('is not returned inline by files/get when over 10 MB: 400 "File too large" instead', async () => {
      const api = await freshSite();
      await okJson(await api.video(videoForm('long.mp4', Buffer.alloc(10485761, 3))));
      const body = await expectError(await api.get('long.mp4'), 400, 'File too large');
      expect(body.max_size_bytes).toBe(10485760);
    });

    it('returns a small video inline from files/get as base64', async () => {
      const api = await freshSite();
      const bytes = randomBytes(1234);
      await okJson(await api.video(videoForm('short.webm', bytes)));
      const body = await okJson<{ content: string; size: number }>(await api.get('short.webm'));
      expect(body).toMatchObject({ content: bytes.toString('base64'), size: 1234 });
    });

    it('stores a unicode path and serves it at its percent-encoded URL', async () => {
      const api = await freshSite();
      const body = await okJson(await api.video(videoForm('vidéos/été.mp4', randomBytes(100))));
      expect(body.url).toBe(`http://${api.site.slug}.localhost:8080/vid%C3%A9os/%C3%A9t%C3%A9.mp4`);
      expect((await api.serve('/vid%C3%A9os/%C3%A9t%C3%A9.mp4')).status).toBe(200);
    });
  });

  describe('serving with Range', () => {
    it.each([
      ['a small video (served from the edge cache)', 10_000],
      ['a large video (streamed from the blob store)', 3 * 1024 * 1024],
    ])('answers a Range request for %s with 206 and the exact bytes', async (_what, size) => {
      const api = await freshSite();
      const bytes = randomBytes(size);
      await okJson(await api.video(videoForm('videos/v.mp4', bytes)));

      const full = await api.serve('/videos/v.mp4');
      expect(full.status).toBe(200);
      expect(full.headers.get('accept-ranges')).toBe('bytes');
      expect(Buffer.from(await full.arrayBuffer()).equals(bytes)).toBe(true);

      const ranged = async (range: string, start: number, end: number) => {
        const res = await api.serve('/videos/v.mp4', { range });
        expect(res.status).toBe(206);
        expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${size}`);
        expect(res.headers.get('content-length')).toBe(String(end - start + 1));
        expect(res.headers.get('content-type')).toBe('video/mp4');
        expect(Buffer.from(await res.arrayBuffer()).equals(bytes.subarray(start, end + 1))).toBe(true);
      };
      await ranged('bytes=100-199', 100, 199);
      await ranged('bytes=0-0', 0, 0);
      await ranged(`bytes=${size - 1000}-`, size - 1000, size - 1);
      await ranged('bytes=-10', size - 10, size - 1);
      await ranged(`bytes=${size - 5}-${size + 100}`, size - 5, size - 1);
    });

    it('answers a Range past the end with 416 and bytes */size', async () => {
      const api = await freshSite();
      await okJson(await api.video(videoForm('v.mp4', randomBytes(1000))));
      const res = await api.serve('/v.mp4', { range: 'bytes=5000-6000' });
      expect(res.status).toBe(416);
      expect(res.headers.get('content-range')).toBe('bytes */1000');
    });
  });

  describe('refused uploads: 4xx, never 500, nothing stored', () => {
    /** Sends `form`, expects `status` (and `error`), and checks that nothing was stored. */
    async function refused(api: FilesApi, form: FormData, status: number, error?: string) {
      const before = await snapshot(api);
      const res = await api.video(form);
      expect(res.status).not.toBe(500);
      const body = await expectError(res, status, error);
      expect(await snapshot(api)).toEqual(before);
      expect(await leftoverTempBlobs(fixture.hp)).toEqual([]);
      return body;
    }

    it.each(['clip.avi', 'clip.mkv', 'clip.html', 'clip.txt', 'clip'])(
      'refuses %s with 400 "Invalid file type"',
      async (path) => {
        const api = await freshSite();
        await refused(api, videoForm(path, randomBytes(100)), 400, 'Invalid file type');
      },
    );

    it('refuses a bad extension sent after the file part with 400 "Invalid file type"', async () => {
      const api = await freshSite();
      await refused(
        api,
        videoForm('clip.avi', randomBytes(100), { pathLast: true }),
        400,
        'Invalid file type',
      );
    });

    it('refuses a form without a file with 400', async () => {
      const api = await freshSite();
      await refused(api, videoForm('videos/a.mp4', undefined), 400);
    });

    it('refuses a file sent under another field name with 400', async () => {
      const api = await freshSite();
      await refused(api, videoForm('videos/a.mp4', randomBytes(100), { fileField: 'video' }), 400);
    });

    it('refuses a form without a path with 400', async () => {
      const api = await freshSite();
      await refused(api, videoForm(undefined, randomBytes(100)), 400);
    });

    it('refuses an empty path with 400', async () => {
      const api = await freshSite();
      await refused(api, videoForm('', randomBytes(100)), 400);
    });

    it.each([
      ['".."', '../escape.mp4'],
      ['".." inside', 'videos/../../escape.mp4'],
      ['an absolute path', '/videos/a.mp4'],
      ['a backslash', 'videos\\a.mp4'],
      ['a NUL byte', 'a\u0000.mp4'],
      ['an empty segment', 'videos//a.mp4'],
    ])('refuses a path with %s with 400 "Invalid path"', async (_what, path) => {
      const api = await freshSite();
      await refused(api, videoForm(path, randomBytes(100)), 400, 'Invalid path');
    });

    it('refuses a bad path sent after the file part with 400', async () => {
      const api = await freshSite();
      await refused(api, videoForm('../x.mp4', randomBytes(100), { pathLast: true }), 400, 'Invalid path');
    });

    it('refuses 52428801 bytes with 400 {error: "File too large", message, max_size: 52428800}', async () => {
      const api = await freshSite();
      await put(api, 'index.html', 'keep');
      const body = await refused(
        api,
        videoForm('big.mp4', Buffer.alloc(MAX_VIDEO_BYTES + 1, 2)),
        400,
        'File too large',
      );
      expect(keys(body)).toEqual(['error', 'max_size', 'message']);
      expect(body.max_size).toBe(MAX_VIDEO_BYTES);
    });

    it('refuses a JSON body with 400', async () => {
      const api = await freshSite();
      const before = await snapshot(api);
      const res = await api.raw('/api/v1/videos/upload', {
        method: 'POST',
        body: JSON.stringify({ path: 'a.mp4', file: 'AAAA' }),
        contentType: 'application/json',
      });
      await expectError(res, 400);
      expect(await snapshot(api)).toEqual(before);
    });

    it('refuses a multipart body without a boundary with 400', async () => {
      const api = await freshSite();
      const res = await api.raw('/api/v1/videos/upload', {
        method: 'POST',
        body: 'garbage',
        contentType: 'multipart/form-data',
      });
      await expectError(res, 400);
    });

    it('refuses a multipart body that ends in the middle of the file with 400', async () => {
      const api = await freshSite();
      const before = await snapshot(api);
      const encoded = multipartBody(videoForm('cut.mp4', randomBytes(10_000)));
      const bytes = Buffer.from(await encoded.bytes());
      const res = await api.raw('/api/v1/videos/upload', {
        method: 'POST',
        body: bytes.subarray(0, 5000),
        contentType: encoded.contentType,
      });
      expect(res.status).not.toBe(500);
      await expectError(res, 400);
      expect(await snapshot(api)).toEqual(before);
      expect(await leftoverTempBlobs(fixture.hp)).toEqual([]);
    });

    it('stores nothing and leaves no temporary blob when the client aborts mid-upload', async () => {
      const api = await freshSite();
      const before = await snapshot(api);
      const encoded = multipartBody(videoForm('aborted.mp4', randomBytes(4 * 1024 * 1024)));
      const bytes = Buffer.from(await encoded.bytes());
      await new Promise<void>((resolve) => {
        const req = http.request({
          host: '127.0.0.1',
          port: fixture.hp.port,
          path: '/api/v1/videos/upload',
          method: 'POST',
          headers: {
            host: 'localhost:8080',
            'x-api-key': api.site.apiKey,
            'content-type': encoded.contentType,
            'content-length': String(bytes.length),
          },
        });
        req.on('error', () => resolve());
        req.on('close', () => resolve());
        req.write(bytes.subarray(0, 1024 * 1024), () => setTimeout(() => req.destroy(), 100));
      });
      expect(await leftoverTempBlobs(fixture.hp)).toEqual([]);
      expect(await snapshot(api)).toEqual(before);
    });

    it('renames a video among video extensions only', async () => {
      const api = await freshSite();
      expect((await api.video(videoForm('videos/clip.mp4', randomBytes(2000)))).status).toBe(200);
      await expectError(await api.rename({ old_path: 'videos/clip.mp4', new_path: 'videos/clip.html' }), 400);
      const moved = await api.rename({ old_path: 'videos/clip.mp4', new_path: 'videos/clip.webm' });
      expect(moved.status).toBe(200);
      const served = await api.serve('/videos/clip.webm');
      expect(served.headers.get('content-type')).toBe('video/webm');
    });

    it('is 401 without a key', async () => {
      const api = await freshSite();
      const res = await fixture.hp.request('/api/v1/videos/upload', {
        method: 'POST',
        form: videoForm('a.mp4', randomBytes(10)),
      });
      await expectError(res, 401, 'Unauthorized');
      expect((await snapshot(api)).entries).toEqual([]);
    });

    it('refuses a video over the storage limit with 403 "Storage limit exceeded"', async () => {
      const api = await freshSite();
      await put(api, 'index.html', 'x'.repeat(500));
      const saved = plans.free.maxStorageBytes;
      plans.free.maxStorageBytes = 2000;
      try {
        const body = await refused(api, videoForm('v.mp4', randomBytes(1501)), 403, 'Storage limit exceeded');
        expect(body).toMatchObject({ current_storage: 500, storage_limit: 2000, available_storage: 1500 });
        await okJson(await api.video(videoForm('v.mp4', randomBytes(1500))));
      } finally {
        plans.free.maxStorageBytes = saved;
      }
    });

    it('refuses a video beyond the file limit with 403 "File limit exceeded"', async () => {
      const api = await freshSite();
      await fill(api, 200);
      await refused(api, videoForm('v.mp4', randomBytes(100)), 403, 'File limit exceeded');
    });
  });
});

describe('video upload when the blob store fails', () => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
  });
  afterAll(() => hp?.stop());

  it('answers 500 {error: "Upload failed", message} and records nothing', async () => {
    const api = filesApi(hp, await hp.createSite('video-broken-store'));
    const before = await snapshot(api);
    // A plain file where the store keeps its in-flight writes: every staged write now fails for real.
    await mkdir(path.join(hp.dataDir, 'files'), { recursive: true });
    await writeFile(path.join(hp.dataDir, 'files', '.tmp'), 'not a folder');
    const res = await api.video(videoForm('videos/clip.mp4', randomBytes(1000)));
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body).toEqual({ error: 'Upload failed', message: expect.any(String) });
    expect(await snapshot(api)).toEqual(before);
  });
});
