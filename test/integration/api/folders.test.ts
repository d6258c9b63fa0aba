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
import { backends } from '../../support/hostplane.js';

const keys = (value: object) => Object.keys(value).sort();
const paths = (entries: FileEntry[]) => entries.map((e) => e.path).sort();

/** A small site: a folder with nested files and an empty sub-folder, plus look-alike siblings. */
async function seed(api: FilesApi): Promise<void> {
  await put(api, 'index.html', 'home');
  await put(api, 'src/index.html', 'src home');
  await put(api, 'src/css/site.css', 'body{}');
  await put(api, 'src/img/logo.svg', '<svg/>');
  await okJson(await api.createFolder({ path: 'src/empty' }));
  await put(api, 'src-old/keep.html', 'look-alike prefix');
  await put(api, 'srcx/keep.html', 'another look-alike');
}

const SRC_TREE = [
  'src',
  'src/css',
  'src/css/site.css',
  'src/empty',
  'src/img',
  'src/img/logo.svg',
  'src/index.html',
];
const OTHERS = ['index.html', 'src-old', 'src-old/keep.html', 'srcx', 'srcx/keep.html'];

describe.each(backends)('folders API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'folders');
  const { freshSite } = fixture;

  describe('POST /api/v1/files/create-folder', () => {
    it('answers {success, message, path}', async () => {
      const api = await freshSite();
      const body = await okJson(await api.createFolder({ path: 'docs' }));
      expect(keys(body)).toEqual(['message', 'path', 'success']);
      expect(body).toMatchObject({ success: true, path: 'docs' });
      expect(typeof body.message).toBe('string');
    });

    it('creates missing parents, each listed as a folder with url null and size 0', async () => {
      const api = await freshSite();
      await okJson(await api.createFolder({ path: 'a/b/c' }));
      expect(await listAll(api)).toEqual([
        {
          path: 'a',
          name: 'a',
          type: 'folder',
          size: 0,
          size_formatted: '0 B',
          url: null,
          depth: 0,
          parent: null,
        },
        {
          path: 'a/b',
          name: 'b',
          type: 'folder',
          size: 0,
          size_formatted: '0 B',
          url: null,
          depth: 1,
          parent: 'a',
        },
        {
          path: 'a/b/c',
          name: 'c',
          type: 'folder',
          size: 0,
          size_formatted: '0 B',
          url: null,
          depth: 2,
          parent: 'a/b',
        },
      ]);
    });

    it('does not count folders as files or bytes', async () => {
      const api = await freshSite();
      await okJson(await api.createFolder({ path: 'a/b/c' }));
      const after = await snapshot(api);
      expect([after.files, after.bytes]).toEqual([0, 0]);
    });

    it('is idempotent: creating it again answers 200 and changes nothing', async () => {
      const api = await freshSite();
      await okJson(await api.createFolder({ path: 'a/b' }));
      const before = await snapshot(api);
      const again = await okJson(await api.createFolder({ path: 'a/b' }));
      expect(again).toMatchObject({ success: true, path: 'a/b' });
      expect(await snapshot(api)).toEqual(before);
    });

    it('accepts a folder that already exists because a file was uploaded into it', async () => {
      const api = await freshSite();
      await put(api, 'blog/post.html', 'x');
      const before = await snapshot(api);
      await okJson(await api.createFolder({ path: 'blog' }));
      expect(await snapshot(api)).toEqual(before);
    });

    it('drops a trailing slash', async () => {
      const api = await freshSite();
      const body = await okJson(await api.createFolder({ path: 'assets/' }));
      expect(body.path).toBe('assets');
      expect(paths(await listAll(api))).toEqual(['assets']);
    });

    it('creates a folder with a unicode name', async () => {
      const api = await freshSite();
      await okJson(await api.createFolder({ path: 'Über uns/日本' }));
      expect(paths(await listAll(api))).toEqual(['Über uns', 'Über uns/日本']);
    });

    it('refuses a folder where a file exists with 409, changing nothing', async () => {
      const api = await freshSite();
      await put(api, 'page.html', 'x');
      const before = await snapshot(api);
      await expectError(await api.createFolder({ path: 'page.html' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('refuses a folder below a file with 409, changing nothing', async () => {
      const api = await freshSite();
      await put(api, 'page.html', 'x');
      const before = await snapshot(api);
      await expectError(await api.createFolder({ path: 'page.html/sub' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });
  });

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

  describe('DELETE /api/v1/files/delete-folder', () => {
    it('deletes the folder and everything in it, and answers {success, message}', async () => {
      const api = await freshSite();
      await seed(api);
      const body = await okJson(await api.deleteFolder('src'));
      expect(body.success).toBe(true);
      expect(typeof body.message).toBe('string');
      expect(paths(await listAll(api))).toEqual(OTHERS);
    });

    it('lowers the counters by exactly the files removed', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await okJson(await api.deleteFolder('src'));
      const after = await snapshot(api);
      const removed = 'src home'.length + 'body{}'.length + '<svg/>'.length;
      expect([after.files, after.bytes]).toEqual([before.files - 3, before.bytes - removed]);
    });

    it('takes the files off the site host', async () => {
      const api = await freshSite();
      await seed(api);
      expect((await api.serve('/src/css/site.css')).status).toBe(200);
      await okJson(await api.deleteFolder('src'));
      expect((await api.serve('/src/css/site.css')).status).toBe(404);
      expect((await api.serve('/src-old/keep.html')).status).toBe(200);
    });

    it('deletes a nested folder and keeps its parent', async () => {
      const api = await freshSite();
      await seed(api);
      await okJson(await api.deleteFolder('src/css'));
      const all = paths(await listAll(api));
      expect(all).not.toContain('src/css');
      expect(all).not.toContain('src/css/site.css');
      expect(all).toContain('src/index.html');
    });

    it('deletes an empty folder without touching the counters', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await okJson(await api.deleteFolder('src/empty'));
      const after = await snapshot(api);
      expect([after.files, after.bytes]).toEqual([before.files, before.bytes]);
      expect(paths(after.entries)).not.toContain('src/empty');
    });

    it('answers a missing folder with 404, a second delete included', async () => {
      const api = await freshSite();
      await seed(api);
      await okJson(await api.deleteFolder('src'));
      const before = await snapshot(api);
      await expectError(await api.deleteFolder('src'), 404, 'Not found');
      await expectError(await api.deleteFolder('never'), 404, 'Not found');
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers a file path with 404 and keeps the file', async () => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      await expectError(await api.deleteFolder('index.html'), 404);
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
    const del = (query: string) => (a: FilesApi) =>
      a.raw(`/api/v1/files/delete-folder${query}`, { method: 'DELETE' });
    const cases: Array<[string, (a: FilesApi) => Promise<Response>]> = [
      ['create-folder: malformed JSON', (a) => a.raw('/api/v1/files/create-folder', json('{"path":'))],
      ['create-folder: JSON array', (a) => a.raw('/api/v1/files/create-folder', json('["x"]'))],
      ['create-folder: path is a number', (a) => a.createFolder({ path: 5 })],
      ['create-folder: path is an object', (a) => a.createFolder({ path: { x: 'y' } })],
      ['create-folder: missing path', (a) => a.createFolder({})],
      ['create-folder: empty path', (a) => a.createFolder({ path: '' })],
      ['create-folder: ".."', (a) => a.createFolder({ path: '../outside' })],
      ['create-folder: ".." inside', (a) => a.createFolder({ path: 'src/../../outside' })],
      ['create-folder: "."', (a) => a.createFolder({ path: '.' })],
      ['create-folder: absolute', (a) => a.createFolder({ path: '/tmp/x' })],
      ['create-folder: only "/"', (a) => a.createFolder({ path: '/' })],
      ['create-folder: backslash', (a) => a.createFolder({ path: 'a\\b' })],
      ['create-folder: NUL byte', (a) => a.createFolder({ path: 'a\u0000b' })],
      ['create-folder: empty segment', (a) => a.createFolder({ path: 'a//b' })],
      ['create-folder: lone surrogate', (a) => a.createFolder({ path: 'x\udfff' })],
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
      ['delete-folder: no path', del('')],
      ['delete-folder: empty path', del('?path=')],
      ['delete-folder: ".."', del('?path=..')],
      ['delete-folder: ".." inside', del('?path=srcx%2F..%2Fsrc')],
      ['delete-folder: absolute', del('?path=%2Fsrc')],
      ['delete-folder: only "/"', del('?path=%2F')],
      ['delete-folder: backslash', del('?path=src%5Ccss')],
      ['delete-folder: NUL byte', del('?path=src%00')],
      ['delete-folder: two paths', del('?path=src&path=srcx')],
    ];

    it.each(cases)('%s', async (_name, send) => {
      const before = await snapshot(api);
      const res = await send(api);
      expect(res.status).not.toBe(500);
      await expectError(res, 400);
      expect(await snapshot(api)).toEqual(before);
    });
  });

  describe('authentication', () => {
    it.each([
      ['POST', '/api/v1/files/create-folder'],
      ['POST', '/api/v1/files/rename-folder'],
      ['DELETE', '/api/v1/files/delete-folder?path=src'],
    ])('%s %s without a key is 401 and changes nothing', async (method, path) => {
      const api = await freshSite();
      await seed(api);
      const before = await snapshot(api);
      const res = await fixture.hp.request(path, {
        method,
        ...(method === 'POST' ? { json: { path: 'new', old_path: 'src', new_path: 'dist' } } : {}),
      });
      await expectError(res, 401, 'Unauthorized');
      expect(await snapshot(api)).toEqual(before);
    });
  });
});
