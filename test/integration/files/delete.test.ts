import { beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  listAll,
  paths,
  okJson,
  put,
  snapshot,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';

describe.each(backends)('files API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'files');
  const { freshSite } = fixture;

  describe('DELETE /api/v1/files/delete', () => {
    it('deletes a file (200), then answers 404 for it', async () => {
      const api = await freshSite();
      await put(api, 'bye.html', 'bye');
      await put(api, 'stay.html', 'stay');
      expect((await api.serve('/bye.html')).status).toBe(200);
      const body = await okJson(await api.delete('bye.html'));
      expect(body.success).toBe(true);
      expect(typeof body.message).toBe('string');
      expect(paths(await listAll(api))).toEqual(['stay.html']);
      await expectError(await api.get('bye.html'), 404);
      await expectError(await api.delete('bye.html'), 404, 'Not found');
      expect((await api.serve('/bye.html')).status).toBe(404);
    });

    it('lowers the counters by exactly the file removed', async () => {
      const api = await freshSite();
      await put(api, 'a.txt', 'x'.repeat(300));
      await put(api, 'b.txt', 'x'.repeat(50));
      await okJson(await api.delete('a.txt'));
      const after = await snapshot(api);
      expect([after.files, after.bytes]).toEqual([1, 50]);
    });

    it('keeps the parent folder of a deleted file', async () => {
      const api = await freshSite();
      await put(api, 'dir/a.txt', 'x');
      await okJson(await api.delete('dir/a.txt'));
      expect(paths(await listAll(api))).toEqual(['dir']);
    });

    it('answers a folder path with 404 and leaves the folder alone', async () => {
      const api = await freshSite();
      await put(api, 'dir/a.txt', 'x');
      const before = await snapshot(api);
      await expectError(await api.delete('dir'), 404);
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

    const cases: Array<[string, (a: FilesApi) => Promise<Response>, number?]> = [
      // delete
      ['delete: no path', (a) => a.raw('/api/v1/files/delete', { method: 'DELETE' })],
      ['delete: empty path', (a) => a.raw('/api/v1/files/delete?path=', { method: 'DELETE' })],
      [
        'delete: ".."',
        (a) => a.raw('/api/v1/files/delete?path=blog%2F..%2Findex.html', { method: 'DELETE' }),
      ],
      ['delete: absolute', (a) => a.raw('/api/v1/files/delete?path=%2Findex.html', { method: 'DELETE' })],
      ['delete: backslash', (a) => a.raw('/api/v1/files/delete?path=blog%5Cpost.html', { method: 'DELETE' })],
      ['delete: NUL byte', (a) => a.raw('/api/v1/files/delete?path=index.html%00', { method: 'DELETE' })],
      [
        'delete: two paths',
        (a) => a.raw('/api/v1/files/delete?path=index.html&path=x', { method: 'DELETE' }),
      ],
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
