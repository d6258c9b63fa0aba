import { beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  listAll,
  okJson,
  put,
  snapshot,
  type FileEntry,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { seed } from '../../support/folders.js';
import { backends } from '../../support/hostplane.js';

const keys = (value: object) => Object.keys(value).sort();
const paths = (entries: FileEntry[]) => entries.map((e) => e.path).sort();

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

  describe('bad input: 4xx with {error, message}, never 500, and nothing changes', () => {
    let api: FilesApi;
    beforeAll(async () => {
      api = await freshSite();
      await seed(api);
    });

    const json = (body: string) => ({ method: 'POST', body, contentType: 'application/json' });

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
