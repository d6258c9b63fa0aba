import { describe, expect, it } from 'vitest';
import { expectError, okJson, put, snapshot, hostplaneWithFreshSites } from '../../support/files-api.js';
import { seed } from '../../support/folders.js';
import { backends } from '../../support/hostplane.js';

const keys = (value: object) => Object.keys(value).sort();

describe.each(backends)('files API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'files');
  const { freshSite } = fixture;

  describe('authentication', () => {
    const endpoints: Array<[string, string]> = [
      ['GET', '/api/v1/files/list'],
      ['GET', '/api/v1/files/get?path=index.html'],
      ['POST', '/api/v1/files/upload'],
      ['POST', '/api/v1/files/rename'],
      ['DELETE', '/api/v1/files/delete?path=index.html'],
    ];

    it.each(endpoints)('%s %s without a key is 401 and changes nothing', async (method, path) => {
      const api = await freshSite();
      await put(api, 'index.html', 'x');
      const before = await snapshot(api);
      const res = await fixture.hp.request(path, {
        method,
        ...(method === 'POST'
          ? { json: { path: 'index.html', content: 'y', old_path: 'index.html', new_path: 'b.html' } }
          : {}),
      });
      const body = await expectError(res, 401, 'Unauthorized');
      expect(keys(body)).toEqual(['error', 'hint_for_ai', 'message']);
      expect(await snapshot(api)).toEqual(before);
    });

    it("refuses another site's key from touching this site's files", async () => {
      const mine = await freshSite();
      const theirs = await freshSite();
      await put(mine, 'index.html', 'mine');
      await put(theirs, 'index.html', 'theirs');
      expect((await okJson(await theirs.get('index.html'))).content).toBe('theirs');
      expect((await okJson(await mine.get('index.html'))).content).toBe('mine');
      const res = await theirs.list(`?site_id=${mine.site.siteId}`);
      expect(res.status).toBe(403);
    });
  });
});

describe.each(backends)('folders API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'folders');
  const { freshSite } = fixture;

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
