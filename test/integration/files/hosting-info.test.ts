import { describe, expect, it } from 'vitest';
import { expectError, okJson, put, hostplaneWithFreshSites } from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';

describe.each(backends)('storage limits and quotas (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'quota');
  const { freshSite } = fixture;

  describe('GET /api/v1/hosting-info', () => {
    it('answers exactly {success, subdomain, base_url, storage_usage}', async () => {
      const api = await freshSite();
      const body = await okJson(await api.hostingInfo());
      expect(body).toEqual({
        success: true,
        subdomain: api.site.slug,
        base_url: `http://${api.site.slug}.localhost:8080`,
        storage_usage: { files_count: 0, storage_used: '0 B' },
      });
    });

    it('reports the file count and the formatted bytes used', async () => {
      const api = await freshSite();
      await put(api, 'a.txt', 'x'.repeat(1024));
      await put(api, 'b/c.txt', 'x'.repeat(512));
      const body = await okJson(await api.hostingInfo());
      expect(body.storage_usage).toEqual({ files_count: 2, storage_used: '1.5 KB' });
    });

    it('gives a base_url that serves the site', async () => {
      const api = await freshSite();
      await put(api, 'index.html', 'home');
      const { base_url: baseUrl } = await okJson<{ base_url: string }>(await api.hostingInfo());
      const res = await fixture.hp.request('/', { host: new URL(baseUrl).host });
      expect(await res.text()).toBe('home');
    });

    it('is 401 without a key', async () => {
      await expectError(await fixture.hp.request('/api/v1/hosting-info'), 401, 'Unauthorized');
      await expectError(await fixture.hp.request('/api/v1/files/storage-limits'), 401, 'Unauthorized');
    });
  });
});
