import { beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  listAll,
  okJson,
  publicUrl,
  put,
  snapshot,
  type FileEntry,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { OTHERS, seed, SRC_TREE } from '../../support/folders.js';
import { backends } from '../../support/hostplane.js';

const paths = (entries: FileEntry[]) => entries.map((e) => e.path).sort();

describe.each(backends)('folders API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'folders');
  const { freshSite } = fixture;

  describe('POST /api/v1/files/rename-folder', () => {
    it('moves the folder and everything in it, and answers {success, message}', async () => {
      const api = await freshSite();
      await seed(api);
      const body = await okJson(await api.renameFolder({ old_path: 'src', new_path: 'dist' }));
      expect(body.success).toBe(true);
      expect(typeof body.message).toBe('string');
      expect(paths(await listAll(api))).toEqual(
        [...OTHERS, ...SRC_TREE.map((p) => p.replace(/^src/, 'dist'))].sort(),
      );
    });

    it('gives every moved entry its new parent, depth and url', async () => {
      const api = await freshSite();
      await seed(api);
      await okJson(await api.renameFolder({ old_path: 'src', new_path: 'site/www' }));
      const entry = (await listAll(api)).find((e) => e.path === 'site/www/css/site.css');
      expect(entry).toEqual({
        path: 'site/www/css/site.css',
        name: 'site.css',
        type: 'file',
        size: 6,
        size_formatted: '6 B',
        url: publicUrl(api.site, 'site/www/css/site.css'),
        depth: 3,
        parent: 'site/www/css',
      });
      expect(paths(await listAll(api))).toContain('site');
    });

    it('keeps file contents and leaves the counters unchanged', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await okJson(await api.renameFolder({ old_path: 'src', new_path: 'dist' }));
      const after = await snapshot(api);
      expect([after.files, after.bytes]).toEqual([before.files, before.bytes]);
      expect((await okJson(await api.get('dist/css/site.css'))).content).toBe('body{}');
      await expectError(await api.get('src/css/site.css'), 404);
    });

    it('changes every URL: old ones 404 on the site host, new ones serve', async () => {
      const api = await freshSite();
      await seed(api);
      expect((await api.serve('/src/index.html')).status).toBe(200); // cached at the edge
      expect((await api.serve('/src/')).status).toBe(200);
      await okJson(await api.renameFolder({ old_path: 'src', new_path: 'dist' }));
      expect((await api.serve('/src/index.html')).status).toBe(404);
      expect((await api.serve('/src/')).status).toBe(404);
      const moved = await api.serve('/dist/css/site.css');
      expect(moved.status).toBe(200);
      expect(await moved.text()).toBe('body{}');
      expect(await (await api.serve('/dist/')).text()).toBe('src home');
    });

    it('moves a nested folder out, leaving its old parent in place', async () => {
      const api = await freshSite();
      await seed(api);
      await okJson(await api.renameFolder({ old_path: 'src/img', new_path: 'img' }));
      const all = paths(await listAll(api));
      expect(all).toContain('img/logo.svg');
      expect(all).toContain('src/index.html');
      expect(all).not.toContain('src/img');
    });

    it('treats "_" and "%" in names literally, not as patterns', async () => {
      const api = await freshSite();
      await put(api, 'a_b/one.html', '1');
      await put(api, 'axb/two.html', '2');
      await put(api, '100%/three.html', '3');
      await put(api, '100x/four.html', '4');
      await okJson(await api.renameFolder({ old_path: 'a_b', new_path: 'moved1' }));
      await okJson(await api.renameFolder({ old_path: '100%', new_path: 'moved2' }));
      expect(paths(await listAll(api))).toEqual([
        '100x',
        '100x/four.html',
        'axb',
        'axb/two.html',
        'moved1',
        'moved1/one.html',
        'moved2',
        'moved2/three.html',
      ]);
    });

    it('moves a folder with a unicode name', async () => {
      const api = await freshSite();
      await put(api, 'café/menü.html', 'menu');
      await okJson(await api.renameFolder({ old_path: 'café', new_path: 'bistró' }));
      const res = await api.serve('/bistr%C3%B3/men%C3%BC.html');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('menu');
    });

    it.each([
      ['into itself', 'src/sub'],
      ['deep into itself', 'src/css/deeper'],
      ['onto itself', 'src'],
    ])('refuses moving a folder %s with 409, changing nothing', async (_what, newPath) => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await expectError(await api.renameFolder({ old_path: 'src', new_path: newPath }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers 409 when a folder exists at new_path, changing nothing', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await expectError(await api.renameFolder({ old_path: 'src', new_path: 'srcx' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers 409 when a file exists at new_path, changing nothing', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await expectError(await api.renameFolder({ old_path: 'src', new_path: 'index.html' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers 409 when new_path lies below a file, changing nothing', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await expectError(await api.renameFolder({ old_path: 'src', new_path: 'index.html/src' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers 409 when moving a folder onto its own parent', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await expectError(await api.renameFolder({ old_path: 'src/css', new_path: 'src' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers a missing folder with 404 {error: "Not found", message}', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await expectError(await api.renameFolder({ old_path: 'nope', new_path: 'other' }), 404, 'Not found');
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers a file as old_path with 404 (use rename)', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await expectError(await api.renameFolder({ old_path: 'index.html', new_path: 'other' }), 404);
      expect(await snapshot(api)).toEqual(before);
    });
  });

  describe('bad input: 4xx with {error, message}, never 500, and nothing changes', () => {
    let api: FilesApi;
    beforeAll(async () => {
      api = await freshSite();
      await seed(api);
    });

    const json = (body: string) => ({ method: 'POST', body, contentType: 'application/json' });

    const cases: Array<[string, (a: FilesApi) => Promise<Response>]> = [
      ['rename-folder: malformed JSON', (a) => a.raw('/api/v1/files/rename-folder', json('{{'))],
      ['rename-folder: old_path is a number', (a) => a.renameFolder({ old_path: 5, new_path: 'x' })],
      ['rename-folder: new_path is null', (a) => a.renameFolder({ old_path: 'src', new_path: null })],
      ['rename-folder: missing new_path', (a) => a.renameFolder({ old_path: 'src' })],
      ['rename-folder: missing old_path', (a) => a.renameFolder({ new_path: 'x' })],
      ['rename-folder: ".." in new_path', (a) => a.renameFolder({ old_path: 'src', new_path: '../x' })],
      ['rename-folder: ".." in old_path', (a) => a.renameFolder({ old_path: 'x/../src', new_path: 'y' })],
      ['rename-folder: absolute new_path', (a) => a.renameFolder({ old_path: 'src', new_path: '/etc' })],
      [
        'rename-folder: backslash in old_path',
        (a) => a.renameFolder({ old_path: 'src\\css', new_path: 'y' }),
      ],
      ['rename-folder: NUL in new_path', (a) => a.renameFolder({ old_path: 'src', new_path: 'y\u0000' })],
    ];

    it.each(cases)('%s', async (_name, send) => {
      const before = await snapshot(api);
      const res = await send(api);
      expect(res.status).not.toBe(500);
      await expectError(res, 400);
      expect(await snapshot(api)).toEqual(before);
    });
  });
});
