// Edge serving, responses: content types (text, binary, video uploads), ETags and conditional
// requests, Range requests, HEAD, large files streamed from the blob store, and the in-memory blob
// cache. Which site and file a request reaches is in serving-routing.test.ts.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiKeyHeader,
  backends,
  metricValue,
  rawRequest,
  scrapeMetrics,
  startHostplane,
  upload,
  uploadBinary,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { afterHeaders, hostOf, rawExchange, seedServingSites, siteGet } from './serving-support.js';

/** Uploads a video through POST /api/v1/videos/upload (multipart/form-data). */
async function uploadVideo(hp: TestHostplane, site: TestSite, sitePath: string, bytes: Buffer) {
  const boundary = `----hostplane${randomBytes(8).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\n${sitePath}\r\n`),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload.bin"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    ),
    bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await rawRequest(hp.port, '/api/v1/videos/upload', {
    method: 'POST',
    headers: {
      ...apiKeyHeader(site),
      host: 'localhost:8080',
      'content-type': `multipart/form-data; boundary=${boundary}`,
    },
    body,
  });
  if (res.status !== 200) throw new Error(`video upload ${sitePath} → ${res.status} ${await res.text()}`);
}

const bytesOf = async (res: Response) => Buffer.from(await res.arrayBuffer());

describe.each(backends)('edge serving (%s)', (backend) => {
  let hp: TestHostplane;
  let alpha: TestSite;
  const get = (site: TestSite | string, path: string, headers: Record<string, string> = {}) =>
    siteGet(hp, site, path, headers);

  beforeAll(async () => {
    hp = await startHostplane(backend);
    ({ alpha } = await seedServingSites(hp));
  });
  afterAll(() => hp?.stop());

  describe('content types', () => {
    const textCases: Array<[string, string]> = [
      ['page.html', 'text/html; charset=utf-8'],
      ['style.css', 'text/css; charset=utf-8'],
      ['app.js', 'text/javascript; charset=utf-8'],
      ['data.json', 'application/json; charset=utf-8'],
      ['logo.svg', 'image/svg+xml; charset=utf-8'],
      ['notes.txt', 'text/plain; charset=utf-8'],
      ['feed.xml', 'application/xml; charset=utf-8'],
    ];
    it.each(textCases)('serves %s as %s', async (name, type) => {
      await upload(hp, alpha, `types/${name}`, `content of ${name}`);
      const res = await get(alpha, `/types/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect(await res.text()).toBe(`content of ${name}`);
    });

    const binaryCases: Array<[string, string]> = [
      ['image.png', 'image/png'],
      ['photo.jpg', 'image/jpeg'],
      ['font.woff2', 'font/woff2'],
      ['doc.pdf', 'application/pdf'],
    ];
    it.each(binaryCases)('serves %s as %s, byte for byte', async (name, type) => {
      const bytes = Buffer.concat([Buffer.from([0x89, 0x00, 0xff, 0x0d, 0x0a]), randomBytes(300)]);
      await uploadBinary(hp, alpha, `types/${name}`, bytes);
      const res = await get(alpha, `/types/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect((await bytesOf(res)).equals(bytes)).toBe(true);
    });

    const videoCases: Array<[string, string]> = [
      ['clip.mp4', 'video/mp4'],
      ['clip.webm', 'video/webm'],
      ['clip.mov', 'video/quicktime'],
    ];
    it.each(videoCases)('serves the video %s as %s', async (name, type) => {
      const bytes = randomBytes(4096);
      await uploadVideo(hp, alpha, `videos/${name}`, bytes);
      const res = await get(alpha, `/videos/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect((await bytesOf(res)).equals(bytes)).toBe(true);
    });

    it('tells browsers not to sniff a different type', async () => {
      const res = await get(alpha, '/');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    });
  });

  describe('ETag and conditional requests', () => {
    it('sends a strong, quoted ETag', async () => {
      const res = await get(alpha, '/');
      const etag = res.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(etag?.startsWith('W/')).toBe(false);
    });

    it('answers If-None-Match with the current ETag with 304 and no body', async () => {
      const etag = (await get(alpha, '/')).headers.get('etag') ?? '';
      const res = await get(alpha, '/', { 'if-none-match': etag });
      expect(res.status).toBe(304);
      expect(res.headers.get('etag')).toBe(etag);
      const raw = await rawExchange(
        hp.port,
        `GET / HTTP/1.1\r\nHost: ${hostOf(alpha)}\r\nIf-None-Match: ${etag}\r\nConnection: close\r\n\r\n`,
      );
      expect(raw.toString('latin1')).toMatch(/^HTTP\/1\.1 304 /);
      expect(afterHeaders(raw).length).toBe(0);
    });

    it('answers 304 when the current ETag is one of several listed, or given as weak', async () => {
      const etag = (await get(alpha, '/')).headers.get('etag') ?? '';
      expect((await get(alpha, '/', { 'if-none-match': `"other", ${etag}` })).status).toBe(304);
      expect((await get(alpha, '/', { 'if-none-match': `W/${etag}` })).status).toBe(304);
    });

    it('answers 200 with the body when If-None-Match names another ETag', async () => {
      const res = await get(alpha, '/', { 'if-none-match': '"not-the-current-one"' });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('<h1>alpha home</h1>');
    });

    it('gives a changed file a new ETag, and the old ETag no longer gets 304', async () => {
      await upload(hp, alpha, 'etag/changing.html', 'version one');
      const before = (await get(alpha, '/etag/changing.html')).headers.get('etag') ?? '';
      await upload(hp, alpha, 'etag/changing.html', 'version two');
      const res = await get(alpha, '/etag/changing.html', { 'if-none-match': before });
      expect(res.status).toBe(200);
      expect(res.headers.get('etag')).not.toBe(before);
      expect(await res.text()).toBe('version two');
    });

    it('gives identical content the same ETag at any path', async () => {
      await upload(hp, alpha, 'etag/a.txt', 'same bytes');
      await upload(hp, alpha, 'etag/b.txt', 'same bytes');
      const a = (await get(alpha, '/etag/a.txt')).headers.get('etag');
      const b = (await get(alpha, '/etag/b.txt')).headers.get('etag');
      expect(a).toBe(b);
    });
  });

  describe('Range requests', () => {
    const content = '0123456789abcdefghijklmnopqrstuvwxyz';
    beforeAll(() => upload(hp, alpha, 'range/abc.txt', content));

    it('advertises Accept-Ranges: bytes', async () => {
      expect((await get(alpha, '/range/abc.txt')).headers.get('accept-ranges')).toBe('bytes');
    });

    it('answers bytes=0-9 with 206, Content-Range and exactly those bytes', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=0-9' });
      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe(`bytes 0-9/${content.length}`);
      expect(res.headers.get('content-length')).toBe('10');
      expect(await res.text()).toBe('0123456789');
    });

    it('answers a suffix range with the last bytes', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=-5' });
      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe(`bytes 31-35/${content.length}`);
      expect(await res.text()).toBe('vwxyz');
    });

    it('answers an open-ended range with the rest of the file', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=30-' });
      expect(res.status).toBe(206);
      expect(await res.text()).toBe('uvwxyz');
    });

    it('clamps a range that runs past the end', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=32-1000' });
      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe(`bytes 32-35/${content.length}`);
      expect(await res.text()).toBe('wxyz');
    });

    it('answers an unsatisfiable range with 416 and Content-Range: bytes */size', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=100-200' });
      expect(res.status).toBe(416);
      expect(res.headers.get('content-range')).toBe(`bytes */${content.length}`);
    });

    it('ignores a malformed Range header and sends the whole file', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'pages=1-2' });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(content);
    });

    it('sends the whole file when If-Range names an older ETag', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=0-9', 'if-range': '"stale"' });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(content);
    });

    it('honours the range when If-Range names the current ETag', async () => {
      const etag = (await get(alpha, '/range/abc.txt')).headers.get('etag') ?? '';
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=0-9', 'if-range': etag });
      expect(res.status).toBe(206);
      expect(await res.text()).toBe('0123456789');
    });
  });

  describe('HEAD', () => {
    it('answers HEAD with the headers of GET', async () => {
      const got = await get(alpha, '/');
      const head = await hp.request('/', { method: 'HEAD', host: hostOf(alpha) });
      expect(head.status).toBe(200);
      for (const name of ['content-type', 'content-length', 'etag', 'accept-ranges']) {
        expect(head.headers.get(name), name).toBe(got.headers.get(name));
      }
    });

    it('sends no body for HEAD', async () => {
      const raw = await rawExchange(
        hp.port,
        `HEAD / HTTP/1.1\r\nHost: ${hostOf(alpha)}\r\nConnection: close\r\n\r\n`,
      );
      expect(raw.toString('latin1')).toMatch(/^HTTP\/1\.1 200 /);
      expect(raw.toString('latin1')).toMatch(/\r\ncontent-length: 19\r\n/i);
      expect(afterHeaders(raw).length).toBe(0);
    });
  });

  describe('large files (over 1 MiB, streamed from the blob store)', () => {
    const big = randomBytes(3 * 1024 * 1024 + 123);
    beforeAll(() => uploadVideo(hp, alpha, 'videos/big.mp4', big));

    it('streams the whole file byte for byte', async () => {
      const res = await get(alpha, '/videos/big.mp4');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-length')).toBe(String(big.length));
      const body = await bytesOf(res);
      expect(createHash('sha256').update(body).digest('hex')).toBe(
        createHash('sha256').update(big).digest('hex'),
      );
    });

    it('streams a range from the middle with 206', async () => {
      const start = 1024 * 1024 + 7;
      const end = start + 200_000 - 1;
      const res = await get(alpha, '/videos/big.mp4', { range: `bytes=${start}-${end}` });
      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${big.length}`);
      expect((await bytesOf(res)).equals(big.subarray(start, end + 1))).toBe(true);
    });

    it('streams a suffix range of a large file', async () => {
      const res = await get(alpha, '/videos/big.mp4', { range: 'bytes=-1000' });
      expect(res.status).toBe(206);
      expect((await bytesOf(res)).equals(big.subarray(big.length - 1000))).toBe(true);
    });

    it('keeps large files out of the in-memory blob cache', async () => {
      const before = await scrapeMetrics(hp);
      await get(alpha, '/videos/big.mp4');
      await get(alpha, '/videos/big.mp4');
      const after = await scrapeMetrics(hp);
      for (const result of ['hit', 'miss']) {
        const labels = { cache: 'blob', result };
        expect(metricValue(after, 'hostplane_edge_cache_events_total', labels)).toBe(
          metricValue(before, 'hostplane_edge_cache_events_total', labels),
        );
      }
    });
  });

  describe('blob cache', () => {
    it('counts a blob cache hit when the same file is requested twice', async () => {
      await upload(hp, alpha, 'cache/once.txt', `unique ${randomBytes(8).toString('hex')}`);
      const before = await scrapeMetrics(hp);
      await get(alpha, '/cache/once.txt');
      const middle = await scrapeMetrics(hp);
      await get(alpha, '/cache/once.txt');
      const after = await scrapeMetrics(hp);
      const hit = { cache: 'blob', result: 'hit' };
      const miss = { cache: 'blob', result: 'miss' };
      const name = 'hostplane_edge_cache_events_total';
      expect(metricValue(middle, name, miss) - metricValue(before, name, miss)).toBe(1);
      expect(metricValue(after, name, hit) - metricValue(middle, name, hit)).toBe(1);
      expect(metricValue(after, name, miss)).toBe(metricValue(middle, name, miss));
    });
  });
});
