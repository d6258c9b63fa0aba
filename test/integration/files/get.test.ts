import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  okJson,
  publicUrl,
  put,
  snapshot,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';

const keys = (value: object) => Object.keys(value).sort();

describe.each(backends)('files API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'files');
  const { freshSite } = fixture;

  describe('GET /api/v1/files/get', () => {
    it('returns a text file as UTF-8 with its path, size and url', async () => {
      const api = await freshSite();
      const content = 'héllo\nwörld ✓';
      await put(api, 'notes/readme.txt', content);
      const body = await okJson(await api.get('notes/readme.txt'));
      expect(body).toMatchObject({
        success: true,
        path: 'notes/readme.txt',
        content,
        size: Buffer.byteLength(content),
        url: publicUrl(api.site, 'notes/readme.txt'),
      });
    });

    it('returns a binary file uploaded as base64 as the same base64', async () => {
      const api = await freshSite();
      const bytes = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0xff, 0xfe]), randomBytes(4000)]);
      await put(api, 'img/pixel.png', bytes.toString('base64'), 'base64');
      const body = await okJson<{ content: string; size: number }>(await api.get('img/pixel.png'));
      expect(body.content).toBe(bytes.toString('base64'));
      expect(body.size).toBe(bytes.length);
    });

    it('serves the uploaded binary byte for byte on the site host', async () => {
      const api = await freshSite();
      const bytes = randomBytes(3000);
      await put(api, 'font.woff2', bytes.toString('base64'), 'base64');
      const res = await api.serve('/font.woff2');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('font/woff2');
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    });

    it('returns a text file uploaded as base64 as its text', async () => {
      const api = await freshSite();
      await put(api, 'data.json', Buffer.from('{"a":1}').toString('base64'), 'base64');
      const body = await okJson<{ content: string }>(await api.get('data.json'));
      expect(body.content).toBe('{"a":1}');
    });

    it('returns a .txt file holding bytes that are not UTF-8 without losing any', async () => {
      const api = await freshSite();
      const bytes = Buffer.from([0xff, 0xfe, 0x41, 0x00, 0xc3]);
      await put(api, 'raw.txt', bytes.toString('base64'), 'base64');
      const body = await okJson<{ content: string; encoding: string }>(await api.get('raw.txt'));
      const decoded = Buffer.from(body.content, body.encoding === 'base64' ? 'base64' : 'utf8');
      expect(decoded.equals(bytes)).toBe(true);
    });

    it('answers a missing file with 404 {error: "Not found", message}', async () => {
      const api = await freshSite();
      const body = await expectError(await api.get('nope.html'), 404, 'Not found');
      expect(keys(body)).toEqual(['error', 'message']);
    });

    it('answers a folder path with 404', async () => {
      const api = await freshSite();
      await put(api, 'dir/a.txt', 'a');
      await expectError(await api.get('dir'), 404, 'Not found');
    });
  });

  describe('bad input: 4xx with {error, message}, never 500, and nothing changes', () => {
    let api: FilesApi;
    beforeAll(async () => {
      api = await freshSite();
      await put(api, 'index.html', '<h1>home</h1>');
      await put(api, 'blog/post.html', 'post');
    });

    const cases: Array<[string, (a: FilesApi) => Promise<Response>, number?]> = [
      // get
      ['get: no path', (a) => a.raw('/api/v1/files/get')],
      ['get: empty path', (a) => a.raw('/api/v1/files/get?path=')],
      ['get: ".."', (a) => a.raw('/api/v1/files/get?path=..%2F..%2Fetc%2Fpasswd')],
      ['get: absolute', (a) => a.raw('/api/v1/files/get?path=%2Findex.html')],
      ['get: backslash', (a) => a.raw('/api/v1/files/get?path=blog%5Cpost.html')],
      ['get: NUL byte', (a) => a.raw('/api/v1/files/get?path=index%00.html')],
      ['get: two paths', (a) => a.raw('/api/v1/files/get?path=index.html&path=blog%2Fpost.html')],
      // The query parser decodes leniently (to U+FFFD): a legal name that names no file.
      ['get: bad percent-encoding', (a) => a.raw('/api/v1/files/get?path=%E0%A4%A.html'), 404],
    ];

    it.each(cases)('%s', async (_name, send, status = 400) => {
      const before = await snapshot(api);
      const res = await send(api);
      expect(res.status).not.toBe(500);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      await expectError(res, status);
      expect(await snapshot(api)).toEqual(before);
      expect(await (await api.serve('/')).text()).toBe('<h1>home</h1>');
    });
  });
});
