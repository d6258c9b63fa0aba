import { beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  listAll,
  paths,
  okJson,
  publicUrl,
  put,
  snapshot,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';

describe.each(backends)('files API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'files');
  const { freshSite } = fixture;

  describe('POST /api/v1/files/rename', () => {
    it('moves a file: gone at the old path, same size and content at the new one', async () => {
      const api = await freshSite();
      await put(api, 'old.html', 'moving');
      const before = await snapshot(api);
      const body = await okJson(await api.rename({ old_path: 'old.html', new_path: 'new.html' }));
      expect(body.success).toBe(true);
      expect(typeof body.message).toBe('string');
      const entries = await listAll(api);
      expect(entries.map((e) => [e.path, e.size])).toEqual([['new.html', 6]]);
      expect((await okJson(await api.get('new.html'))).content).toBe('moving');
      await expectError(await api.get('old.html'), 404);
      const after = await snapshot(api);
      expect([after.files, after.bytes]).toEqual([before.files, before.bytes]);
    });

    it('keeps the kind of file: a page cannot be renamed to a video extension', async () => {
      const api = await freshSite();
      await put(api, 'page.html', '<p>x</p>');
      const before = await snapshot(api);
      const res = await api.rename({ old_path: 'page.html', new_path: 'page.mp4' });
      await expectError(res, 400);
      expect(await snapshot(api)).toEqual(before);
    });

    it('creates the folders of the new path', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'x');
      await okJson(await api.rename({ old_path: 'a.html', new_path: 'x/y/a.html' }));
      expect(paths(await listAll(api))).toEqual(['x', 'x/y', 'x/y/a.html']);
    });

    it('changes the public URL: the old one 404s on the site host, the new one serves', async () => {
      const api = await freshSite();
      await put(api, 'docs/guide.html', 'guide');
      expect((await api.serve('/docs/guide.html')).status).toBe(200); // cached at the edge
      const body = await okJson(
        await api.rename({ old_path: 'docs/guide.html', new_path: 'help/guide.html' }),
      );
      expect(body.url).toBe(publicUrl(api.site, 'help/guide.html'));
      expect((await api.serve('/docs/guide.html')).status).toBe(404);
      const moved = await api.serve('/help/guide.html');
      expect(moved.status).toBe(200);
      expect(await moved.text()).toBe('guide');
    });

    it('answers a missing source with 404, changing nothing', async () => {
      const api = await freshSite();
      await put(api, 'other.html', 'x');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'ghost.html', new_path: 'b.html' }), 404, 'Not found');
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers 409 when a file exists at new_path, and both files keep their content', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'A');
      await put(api, 'b.html', 'B');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'a.html', new_path: 'b.html' }), 409);
      expect(await snapshot(api)).toEqual(before);
      expect((await okJson(await api.get('a.html'))).content).toBe('A');
      expect((await okJson(await api.get('b.html'))).content).toBe('B');
    });

    it('answers 409 when a folder exists at new_path', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'A');
      await put(api, 'b.html/inner.txt', 'x');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'a.html', new_path: 'b.html' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers 409 when new_path lies below a file', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'A');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'a.html', new_path: 'a.html/b.html' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers a folder as old_path with 404 (use rename-folder)', async () => {
      const api = await freshSite();
      await put(api, 'dir/a.html', 'A');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'dir', new_path: 'dir2.html' }), 404);
      expect(await snapshot(api)).toEqual(before);
    });

    it('refuses a new_path with a disallowed extension with 400 "Invalid file type"', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'A');
      const before = await snapshot(api);
      await expectError(
        await api.rename({ old_path: 'a.html', new_path: 'a.exe' }),
        400,
        'Invalid file type',
      );
      expect(await snapshot(api)).toEqual(before);
    });
  });

  describe('bad input: 4xx with {error, message}, never 500, and nothing changes', () => {
    let api: FilesApi;
    beforeAll(async () => {
      api = await freshSite();
      await put(api, 'index.html', '<h1>home</h1>');
      await put(api, 'blog/post.html', 'post');
    });

    const json = (body: string) => ({ method: 'POST', body, contentType: 'application/json' });
    const cases: Array<[string, (a: FilesApi) => Promise<Response>, number?]> = [
      // rename
      ['rename: malformed JSON', (a) => a.raw('/api/v1/files/rename', json('{old_path: index.html}'))],
      ['rename: old_path is a number', (a) => a.rename({ old_path: 5, new_path: 'x.html' })],
      ['rename: new_path is a boolean', (a) => a.rename({ old_path: 'index.html', new_path: true })],
      ['rename: missing new_path', (a) => a.rename({ old_path: 'index.html' })],
      ['rename: missing old_path', (a) => a.rename({ new_path: 'x.html' })],
      ['rename: ".." in new_path', (a) => a.rename({ old_path: 'index.html', new_path: '../x.html' })],
      ['rename: ".." in old_path', (a) => a.rename({ old_path: '../index.html', new_path: 'x.html' })],
      ['rename: absolute new_path', (a) => a.rename({ old_path: 'index.html', new_path: '/tmp/x.html' })],
      ['rename: backslash in new_path', (a) => a.rename({ old_path: 'index.html', new_path: 'a\\x.html' })],
      ['rename: NUL in new_path', (a) => a.rename({ old_path: 'index.html', new_path: 'x\u0000.html' })],
      ['rename: NUL in old_path', (a) => a.rename({ old_path: 'index.html\u0000', new_path: 'x.html' })],
      ['rename: new_path without extension', (a) => a.rename({ old_path: 'index.html', new_path: 'index' })],
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
