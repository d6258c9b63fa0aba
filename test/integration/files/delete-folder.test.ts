import { beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  listAll,
  okJson,
  snapshot,
  type FileEntry,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { OTHERS, seed } from '../../support/folders.js';
import { backends } from '../../support/hostplane.js';

const paths = (entries: FileEntry[]) => entries.map((e) => e.path).sort();

describe.each(backends)('folders API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'folders');
  const { freshSite } = fixture;

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

    const del = (query: string) => (a: FilesApi) =>
      a.raw(`/api/v1/files/delete-folder${query}`, { method: 'DELETE' });
    const cases: Array<[string, (a: FilesApi) => Promise<Response>]> = [
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
});
