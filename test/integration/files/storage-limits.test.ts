import { describe, expect, it } from 'vitest';
import { fill, okJson, put, storageLimits, hostplaneWithFreshSites } from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';
import { withFreeLimits } from '../../support/plans.js';

const FREE_FILES = 200;
const FREE_BYTES = 524288000;

describe.each(backends)('storage limits and quotas (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'quota');
  const { freshSite } = fixture;

  describe('GET /api/v1/files/storage-limits', () => {
    it('answers an empty free site with every field of spec 2.8 and the free limits', async () => {
      const api = await freshSite();
      expect(await storageLimits(api)).toEqual({
        success: true,
        plan: { name: 'Free', type: 'free' },
        usage: {
          files: { current: 0, limit: FREE_FILES, available: FREE_FILES, percentage: 0 },
          storage: {
            current: 0,
            limit: FREE_BYTES,
            available: FREE_BYTES,
            current_formatted: '0 B',
            limit_formatted: '500 MB',
            available_formatted: '500 MB',
            percentage: 0,
          },
        },
        // Beyond the spec: what deploys kept for rollback hold (see deploy-rollback-storage.test.ts).
        rollback: {
          current: 0,
          limit: FREE_BYTES,
          current_formatted: '0 B',
          limit_formatted: '500 MB',
          deploys: 0,
        },
        warnings: { files_near_limit: false, storage_near_limit: false },
      });
    });

    it('counts files and bytes as they are uploaded, overwritten and deleted', async () => {
      const api = await freshSite();
      await put(api, 'a.txt', 'x'.repeat(1024));
      await put(api, 'dir/b.txt', 'x'.repeat(2048));
      await put(api, 'c.txt', 'x');
      await put(api, 'c.txt', 'x'.repeat(1024)); // overwrite: same count, more bytes
      await okJson(await api.delete('a.txt'));
      const { usage } = await storageLimits(api);
      expect(usage.files).toEqual({ current: 2, limit: FREE_FILES, available: 198, percentage: 1 });
      expect(usage.storage).toMatchObject({
        current: 3072,
        available: FREE_BYTES - 3072,
        current_formatted: '3 KB',
      });
      expect(usage.storage.percentage).toBeGreaterThanOrEqual(0);
      expect(usage.storage.percentage).toBeLessThan(0.01);
    });

    it.each([
      ['standard', 'Standard', 50_000, 15 * 1024 ** 3, '15 GB'],
      ['premium', 'Premium', 120_000, 50 * 1024 ** 3, '50 GB'],
      ['business', 'Business', 450_000, 200 * 1024 ** 3, '200 GB'],
    ] as const)(
      'reports the %s plan limits from the guide table',
      async (type, name, files, bytes, formatted) => {
        const api = await freshSite(type);
        const body = await storageLimits(api);
        expect(body.plan).toEqual({ name, type });
        expect(body.usage.files).toEqual({ current: 0, limit: files, available: files, percentage: 0 });
        expect(body.usage.storage).toMatchObject({
          limit: bytes,
          available: bytes,
          limit_formatted: formatted,
        });
      },
    );

    it('shows an enterprise site as unlimited: limits null, no percentages, no warnings', async () => {
      const api = await freshSite('enterprise');
      await put(api, 'a.txt', 'hello');
      expect(await storageLimits(api)).toEqual({
        success: true,
        plan: { name: 'Enterprise', type: 'enterprise' },
        usage: {
          files: { current: 1, limit: null, available: null, percentage: 0 },
          storage: {
            current: 5,
            limit: null,
            available: null,
            current_formatted: '5 B',
            limit_formatted: 'Unlimited',
            available_formatted: 'Unlimited',
            percentage: 0,
          },
        },
        rollback: {
          current: 0,
          limit: null,
          current_formatted: '0 B',
          limit_formatted: 'Unlimited',
          deploys: 0,
        },
        warnings: { files_near_limit: false, storage_near_limit: false },
      });
    });

    it('raises files_near_limit at exactly 80 % of the file count (160 of 200)', async () => {
      const api = await freshSite();
      await fill(api, 159);
      let body = await storageLimits(api);
      expect(body.usage.files).toMatchObject({ current: 159, available: 41, percentage: 79.5 });
      expect(body.warnings).toEqual({ files_near_limit: false, storage_near_limit: false });
      await put(api, 'the-160th.txt', 'x');
      body = await storageLimits(api);
      expect(body.usage.files).toMatchObject({ current: 160, available: 40, percentage: 80 });
      expect(body.warnings).toEqual({ files_near_limit: true, storage_near_limit: false });
    });

    it('raises storage_near_limit at exactly 80 % of storage, not a byte before', async () => {
      await withFreeLimits({ maxStorageBytes: 100_000 }, async () => {
        const api = await freshSite();
        await put(api, 'a.txt', 'x'.repeat(79_999));
        let body = await storageLimits(api);
        expect(body.usage.storage).toMatchObject({ current: 79_999, limit: 100_000, available: 20_001 });
        expect(body.usage.storage.percentage).toBeLessThan(80);
        expect(body.warnings.storage_near_limit).toBe(false);
        await put(api, 'b.txt', 'x');
        body = await storageLimits(api);
        expect(body.usage.storage.percentage).toBe(80);
        expect(body.warnings).toEqual({ files_near_limit: false, storage_near_limit: true });
      });
    });

    it('reports 100 % and nothing available when a lowered limit is already exceeded', async () => {
      const api = await freshSite();
      await put(api, 'a.txt', 'x'.repeat(5000));
      await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
        const { usage, warnings } = await storageLimits(api);
        expect(usage.storage).toMatchObject({ current: 5000, available: 0, percentage: 100 });
        expect(usage.storage.available_formatted).toBe('0 B');
        expect(warnings.storage_near_limit).toBe(true);
      });
    });
  });
});
