import { describe, expect, it } from 'vitest';
import {
  expectError,
  fill,
  listAll,
  okJson,
  put,
  snapshot,
  storageLimits,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';
import { withFreeLimits } from '../../support/plans.js';

const FREE_FILES = 200;
const UPGRADE_URL = 'http://localhost:8080/console/plans';

const keys = (value: object) => Object.keys(value).sort();

/** Sends all uploads at once and returns their statuses and bodies, in order. */
async function concurrently(api: FilesApi, uploads: Array<{ path: string; content: string }>) {
  return Promise.all(
    uploads.map(async (body) => {
      const res = await api.upload(body);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    }),
  );
}

const count = (results: Array<{ status: number }>, status: number) =>
  results.filter((r) => r.status === status).length;

describe.each(backends)('storage limits and quotas (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'quota');
  const { freshSite } = fixture;

  describe('file limit', () => {
    it('refuses the 201st file with 403 and every field of spec 7, changing nothing', async () => {
      const api = await freshSite();
      await fill(api, FREE_FILES);
      const before = await snapshot(api);
      const body = await expectError(
        await api.upload({ path: 'one-too-many.txt', content: 'x' }),
        403,
        'File limit exceeded',
      );
      expect(keys(body)).toEqual([
        'current_file_count',
        'current_plan',
        'error',
        'file_limit',
        'message',
        'upgrade_url',
      ]);
      expect(body).toMatchObject({
        current_file_count: FREE_FILES,
        file_limit: FREE_FILES,
        current_plan: 'free',
        upgrade_url: UPGRADE_URL,
      });
      expect(await snapshot(api)).toEqual(before);
    });

    it('still overwrites, renames, makes folders and deletes at the limit', async () => {
      const api = await freshSite();
      await fill(api, FREE_FILES);
      await put(api, 'fill-0000.txt', 'overwritten');
      await okJson(await api.rename({ old_path: 'fill-0001.txt', new_path: 'moved/fill-0001.txt' }));
      await okJson(await api.createFolder({ path: 'empty/folder' }));
      await okJson(await api.delete('fill-0002.txt'));
      await put(api, 'new-after-delete.txt', 'fits again');
      await expectError(
        await api.upload({ path: 'but-not-two.txt', content: 'x' }),
        403,
        'File limit exceeded',
      );
      expect((await storageLimits(api)).usage.files).toMatchObject({ current: FREE_FILES, available: 0 });
    });

    it('lets exactly the remaining 10 of 20 concurrent uploads through (190 used)', async () => {
      const api = await freshSite();
      await fill(api, 190);
      const results = await concurrently(
        api,
        Array.from({ length: 20 }, (_, i) => ({ path: `race/file-${i}.txt`, content: `r${i}` })),
      );
      expect(count(results, 200)).toBe(10);
      expect(count(results, 403)).toBe(10);
      for (const r of results.filter((x) => x.status === 403))
        expect(r.body.error).toBe('File limit exceeded');
      const after = await snapshot(api);
      expect(after.files).toBe(FREE_FILES);
      expect(after.entries.filter((e) => e.type === 'file')).toHaveLength(FREE_FILES);
      expect(after.entries.filter((e) => e.path.startsWith('race/'))).toHaveLength(10);
    });
  });

  describe('concurrent writes to one path', () => {
    it('counts 20 concurrent uploads to the same new path as one file', async () => {
      const api = await freshSite();
      const results = await concurrently(
        api,
        Array.from({ length: 20 }, (_, i) => ({ path: 'same.txt', content: 'x'.repeat(100 + i) })),
      );
      expect(count(results, 200)).toBe(20);
      const after = await snapshot(api);
      expect(after.files).toBe(1);
      expect(after.entries).toHaveLength(1);
      expect(after.bytes).toBe(after.entries[0]?.size);
    });

    it('takes the last of 20 concurrent uploads to the same path at the limit without a 403', async () => {
      const api = await freshSite();
      await fill(api, FREE_FILES - 1);
      const results = await concurrently(
        api,
        Array.from({ length: 20 }, (_, i) => ({ path: 'last-slot.txt', content: `v${i}` })),
      );
      expect(count(results, 200)).toBe(20);
      expect((await storageLimits(api)).usage.files.current).toBe(FREE_FILES);
    });
  });

  describe('folder limit', () => {
    it('allows as many folders as the plan allows files, then answers 403 and creates nothing', async () => {
      await withFreeLimits({ maxFiles: 3 }, async () => {
        const api = await freshSite();
        expect((await api.createFolder({ path: 'a/b' })).status).toBe(200);
        expect((await api.createFolder({ path: 'c' })).status).toBe(200);
        const before = await snapshot(api);
        const refused = await api.createFolder({ path: 'd/e' });
        expect(refused.status).toBe(403);
        const body = await refused.json();
        expect(body).toMatchObject({
          error: 'Folder limit exceeded',
          current_folder_count: 3,
          folder_limit: 3,
          current_plan: 'free',
        });
        expect(typeof body.message).toBe('string');
        expect(typeof body.upgrade_url).toBe('string');
        // An upload whose parents would exceed the limit is refused as a whole, too.
        expect((await api.upload({ path: 'x/y.html', content: 'y' })).status).toBe(403);
        expect(await snapshot(api)).toEqual(before);
        // Existing folders still take files.
        expect((await api.upload({ path: 'a/b/ok.html', content: 'ok' })).status).toBe(200);
      });
    });
  });

  describe('storage limit', () => {
    it('refuses an upload over the limit with 403 and every field of spec 7, changing nothing', async () => {
      await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
        const api = await freshSite();
        await put(api, 'a.txt', 'x'.repeat(600));
        const before = await snapshot(api);
        const body = await expectError(
          await api.upload({ path: 'b.txt', content: 'x'.repeat(401) }),
          403,
          'Storage limit exceeded',
        );
        expect(keys(body)).toEqual([
          'available_storage',
          'available_storage_formatted',
          'current_plan',
          'current_storage',
          'current_storage_formatted',
          'error',
          'message',
          'storage_limit',
          'storage_limit_formatted',
          'upgrade_url',
        ]);
        expect(body).toMatchObject({
          current_storage: 600,
          storage_limit: 1000,
          storage_limit_formatted: '1000 B',
          current_storage_formatted: '600 B',
          available_storage: 400,
          available_storage_formatted: '400 B',
          current_plan: 'free',
          upgrade_url: UPGRADE_URL,
        });
        expect(await snapshot(api)).toEqual(before);
      });
    });

    it('accepts an upload that fills storage to exactly the limit', async () => {
      await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
        const api = await freshSite();
        await put(api, 'a.txt', 'x'.repeat(600));
        await put(api, 'b.txt', 'x'.repeat(400));
        const { usage } = await storageLimits(api);
        expect(usage.storage).toMatchObject({ current: 1000, available: 0, percentage: 100 });
      });
    });

    it('charges an overwrite only for the bytes it adds', async () => {
      await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
        const api = await freshSite();
        await put(api, 'a.txt', 'x'.repeat(600));
        await put(api, 'a.txt', 'x'.repeat(1000));
        await expectError(
          await api.upload({ path: 'a.txt', content: 'x'.repeat(1001) }),
          403,
          'Storage limit exceeded',
        );
        expect((await storageLimits(api)).usage.storage.current).toBe(1000);
      });
    });

    it('lets an overwrite shrink a file even when the site is over a lowered limit', async () => {
      const api = await freshSite();
      await put(api, 'a.txt', 'x'.repeat(5000));
      await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
        await put(api, 'a.txt', 'x'.repeat(10));
        expect((await storageLimits(api)).usage.storage.current).toBe(10);
      });
    });

    it('lets exactly 10 of 20 concurrent 100-byte uploads fill 1000 bytes', async () => {
      await withFreeLimits({ maxStorageBytes: 1000 }, async () => {
        const api = await freshSite();
        const results = await concurrently(
          api,
          Array.from({ length: 20 }, (_, i) => ({
            path: `race-${i}.txt`,
            content: String(i % 10).repeat(100),
          })),
        );
        expect(count(results, 200)).toBe(10);
        expect(count(results, 403)).toBe(10);
        for (const r of results.filter((x) => x.status === 403)) {
          expect(r.body.error).toBe('Storage limit exceeded');
        }
        const after = await snapshot(api);
        expect([after.files, after.bytes]).toEqual([10, 1000]);
        expect(await listAll(api)).toHaveLength(10);
      });
    });
  });
});
