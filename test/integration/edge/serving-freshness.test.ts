// Edge serving, freshness: once an upload, rename or delete (of a file, a folder or the 404.html)
// has returned, the edge serves the new state at once, with no stale page from its caches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiKeyHeader,
  backends,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { siteGet } from './serving-support.js';

async function apiPost(hp: TestHostplane, site: TestSite, path: string, json: unknown) {
  const res = await hp.request(path, { method: 'POST', headers: apiKeyHeader(site), json });
  if (res.status !== 200) throw new Error(`${path} → ${res.status} ${await res.text()}`);
}

async function apiDelete(hp: TestHostplane, site: TestSite, pathAndQuery: string) {
  const res = await hp.request(pathAndQuery, { method: 'DELETE', headers: apiKeyHeader(site) });
  if (res.status !== 200) throw new Error(`${pathAndQuery} → ${res.status} ${await res.text()}`);
}

describe.each(backends)('edge serving (%s)', (backend) => {
  let hp: TestHostplane;
  const get = (site: TestSite | string, path: string, headers: Record<string, string> = {}) =>
    siteGet(hp, site, path, headers);

  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  describe('freshness: no stale page once a write has returned', () => {
    let fresh: TestSite;
    beforeAll(async () => {
      fresh = await hp.createSite('fresh');
    });

    it('serves new content at once after an overwrite', async () => {
      await upload(hp, fresh, 'page.html', 'old content');
      expect(await (await get(fresh, '/page.html')).text()).toBe('old content');
      await upload(hp, fresh, 'page.html', 'new content');
      expect(await (await get(fresh, '/page.html')).text()).toBe('new content');
    });

    it('serves a file at once when it was requested (and missing) before the upload', async () => {
      expect((await get(fresh, '/later.html')).status).toBe(404);
      await upload(hp, fresh, 'later.html', 'arrived');
      const res = await get(fresh, '/later.html');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('arrived');
    });

    it('moves a renamed file to its new path at once', async () => {
      await upload(hp, fresh, 'before.html', 'moving file');
      expect((await get(fresh, '/before.html')).status).toBe(200);
      await apiPost(hp, fresh, '/api/v1/files/rename', { old_path: 'before.html', new_path: 'after.html' });
      expect((await get(fresh, '/before.html')).status).toBe(404);
      expect(await (await get(fresh, '/after.html')).text()).toBe('moving file');
    });

    it('stops serving a deleted file at once', async () => {
      await upload(hp, fresh, 'doomed.html', 'here now');
      expect((await get(fresh, '/doomed.html')).status).toBe(200);
      await apiDelete(hp, fresh, '/api/v1/files/delete?path=doomed.html');
      expect((await get(fresh, '/doomed.html')).status).toBe(404);
    });

    it('serves a moved folder at its new path at once', async () => {
      await upload(hp, fresh, 'old-section/index.html', 'section');
      expect((await get(fresh, '/old-section/')).status).toBe(200);
      await apiPost(hp, fresh, '/api/v1/files/rename-folder', {
        old_path: 'old-section',
        new_path: 'new-section',
      });
      expect((await get(fresh, '/old-section/')).status).toBe(404);
      expect(await (await get(fresh, '/new-section/')).text()).toBe('section');
    });

    it('stops serving a deleted folder at once', async () => {
      await upload(hp, fresh, 'gone/index.html', 'folder page');
      expect((await get(fresh, '/gone/')).status).toBe(200);
      await apiDelete(hp, fresh, '/api/v1/files/delete-folder?path=gone');
      expect((await get(fresh, '/gone/')).status).toBe(404);
    });

    it('switches to a newly uploaded 404.html at once', async () => {
      expect(await (await get(fresh, '/nowhere')).text()).not.toContain('custom not found');
      await upload(hp, fresh, '404.html', 'custom not found');
      const res = await get(fresh, '/nowhere');
      expect(res.status).toBe(404);
      expect(await res.text()).toBe('custom not found');
    });
  });
});
