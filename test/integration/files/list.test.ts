import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { siteFiles } from '../../../src/files/tables.js';
import {
  expectError,
  fill,
  okJson,
  paths,
  publicUrl,
  put,
  type FileEntry,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';

const keys = (value: object) => Object.keys(value).sort();
interface ListBody {
  success: boolean;
  storage_folder: Record<string, unknown>;
  pagination: Record<string, unknown>;
  files: FileEntry[];
}

describe.each(backends)('files API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'files');
  const { freshSite } = fixture;

  describe('GET /api/v1/files/list', () => {
    it('answers an empty site with success, storage_folder, pagination and no files', async () => {
      const api = await freshSite();
      const body = await okJson<ListBody>(await api.list());
      expect(keys(body)).toEqual(['files', 'pagination', 'storage_folder', 'success']);
      expect(body).toEqual({
        success: true,
        storage_folder: {
          slug: api.site.slug,
          name: api.site.slug,
          file_count: 0,
          storage_used: 0,
          storage_used_formatted: '0 B',
        },
        pagination: {
          current_page: 1,
          per_page: 100,
          total_items: 0,
          total_pages: 1,
          has_more: false,
          is_last_page: true,
        },
        files: [],
      });
    });

    it('gives every entry exactly path, name, type, size, size_formatted, url, depth, parent', async () => {
      const api = await freshSite();
      await put(api, 'blog/post.html', 'hello');
      const { files } = await okJson<ListBody>(await api.list());
      for (const entry of files) {
        expect(keys(entry)).toEqual([
          'depth',
          'name',
          'parent',
          'path',
          'size',
          'size_formatted',
          'type',
          'url',
        ]);
      }
      expect(files).toEqual([
        {
          path: 'blog',
          name: 'blog',
          type: 'folder',
          size: 0,
          size_formatted: '0 B',
          url: null,
          depth: 0,
          parent: null,
        },
        {
          path: 'blog/post.html',
          name: 'post.html',
          type: 'file',
          size: 5,
          size_formatted: '5 B',
          url: publicUrl(api.site, 'blog/post.html'),
          depth: 1,
          parent: 'blog',
        },
      ]);
    });

    it('reports the file count and bytes used in storage_folder, folders not counted', async () => {
      const api = await freshSite();
      await put(api, 'a/b/big.txt', 'x'.repeat(1500));
      await put(api, 'small.txt', 'y'.repeat(100));
      const body = await okJson<ListBody>(await api.list());
      expect(body.storage_folder).toEqual({
        slug: api.site.slug,
        name: api.site.slug,
        file_count: 2,
        storage_used: 1600,
        storage_used_formatted: '1.56 KB',
      });
      expect(body.pagination.total_items).toBe(4);
    });

    it('omits files named .gitkeep, at the root and in folders, also from total_items', async () => {
      const api = await freshSite();
      await put(api, 'assets/logo.svg', '<svg/>');
      const gitkeep = (path: string, parent: string | null, depth: number) => ({
        siteId: api.site.siteId,
        path,
        kind: 'file' as const,
        name: '.gitkeep',
        parent,
        depth,
        size: 0,
        blobKey: createHash('sha256').update('').digest('hex'),
        contentType: 'application/octet-stream',
      });
      // The upload allowlist refuses .gitkeep (no extension), so rows are written directly.
      await fixture.hp.services.store.db
        .insert(siteFiles)
        .values([gitkeep('.gitkeep', null, 0), gitkeep('assets/.gitkeep', 'assets', 1)]);
      const body = await okJson<ListBody>(await api.list());
      expect(paths(body.files)).toEqual(['assets', 'assets/logo.svg']);
      expect(body.pagination.total_items).toBe(2);
    });

    it('still lists a folder named .gitkeep: only files of that name are hidden', async () => {
      const api = await freshSite();
      await put(api, '.gitkeep/page.html', 'x');
      const body = await okJson<ListBody>(await api.list());
      expect(paths(body.files)).toEqual(['.gitkeep', '.gitkeep/page.html']);
      expect(body.pagination.total_items).toBe(2);
    });

    it('orders by depth, then folders before files, then by name ignoring case', async () => {
      const api = await freshSite();
      for (const path of [
        'Zeta.html',
        'zoo/a.html',
        'beta.html',
        'assets/b.css',
        'assets/img/x.png',
        'Docs/c.txt',
        'alpha.html',
        'zoo/A-folder/deep.txt',
      ]) {
        await put(api, path, 'x');
      }
      expect(await okJson(await api.createFolder({ path: 'empty' }))).toMatchObject({ success: true });
      const { files } = await okJson<ListBody>(await api.list());
      expect(paths(files)).toEqual([
        'assets',
        'Docs',
        'empty',
        'zoo',
        'alpha.html',
        'beta.html',
        'Zeta.html',
        'zoo/A-folder',
        'assets/img',
        'zoo/a.html',
        'assets/b.css',
        'Docs/c.txt',
        'zoo/A-folder/deep.txt',
        'assets/img/x.png',
      ]);
    });

    it('pages with page and per_page: total_pages, has_more and is_last_page follow', async () => {
      const api = await freshSite();
      for (const name of ['a', 'b', 'c', 'd', 'e']) await put(api, `${name}.txt`, name);
      const page = async (n: number) => okJson<ListBody>(await api.list(`?page=${n}&per_page=2`));

      const first = await page(1);
      expect(first.pagination).toEqual({
        current_page: 1,
        per_page: 2,
        total_items: 5,
        total_pages: 3,
        has_more: true,
        is_last_page: false,
      });
      expect(paths(first.files)).toEqual(['a.txt', 'b.txt']);

      const second = await page(2);
      expect(second.pagination).toMatchObject({ current_page: 2, has_more: true, is_last_page: false });
      expect(paths(second.files)).toEqual(['c.txt', 'd.txt']);

      const last = await page(3);
      expect(last.pagination).toMatchObject({ current_page: 3, has_more: false, is_last_page: true });
      expect(paths(last.files)).toEqual(['e.txt']);
    });

    it('pages through same-named files in different folders without repeating or skipping any', async () => {
      const api = await freshSite();
      const folders = Array.from({ length: 30 }, (_, i) => `f${String(i).padStart(2, '0')}`);
      for (let i = 0; i < folders.length; i += 10) {
        await Promise.all(folders.slice(i, i + 10).map((f) => put(api, `${f}/index.html`, f)));
      }
      const paged: string[] = [];
      for (let page = 1; page <= 9; page += 1) {
        paged.push(...paths((await okJson<ListBody>(await api.list(`?page=${page}&per_page=7`))).files));
      }
      // Ties on (depth, kind, name) are broken by the full path, so every page boundary is stable.
      expect(paged).toEqual([...folders, ...folders.map((f) => `${f}/index.html`)]);
    });

    it('answers a page past the end with no files, as the last page', async () => {
      const api = await freshSite();
      await put(api, 'only.txt', 'x');
      const body = await okJson<ListBody>(await api.list('?page=7&per_page=10'));
      expect(body.files).toEqual([]);
      expect(body.pagination).toEqual({
        current_page: 7,
        per_page: 10,
        total_items: 1,
        total_pages: 1,
        has_more: false,
        is_last_page: true,
      });
    });

    it('returns at most 100 entries by default and the rest on page 2', async () => {
      const api = await freshSite();
      await fill(api, 101);
      const first = await okJson<ListBody>(await api.list());
      expect(first.files).toHaveLength(100);
      expect(first.pagination).toMatchObject({
        per_page: 100,
        total_items: 101,
        total_pages: 2,
        has_more: true,
        is_last_page: false,
      });
      const second = await okJson<ListBody>(await api.list('?page=2'));
      expect(paths(second.files)).toEqual(['fill-0100.txt']);
    });

    it('answers a huge page number with an empty last page, not an error', async () => {
      const api = await freshSite();
      await put(api, 'a.txt', 'a');
      const body = await okJson<ListBody>(await api.list('?page=999999999999999'));
      expect(body.files).toEqual([]);
      expect(body.pagination).toMatchObject({
        current_page: 999999999999999,
        has_more: false,
        is_last_page: true,
      });
    });

    it('accepts per_page at both ends of 1-100', async () => {
      const api = await freshSite();
      await put(api, 'a.txt', 'a');
      await put(api, 'b.txt', 'b');
      const one = await okJson<ListBody>(await api.list('?per_page=1'));
      expect(one.files).toHaveLength(1);
      expect(one.pagination).toMatchObject({ per_page: 1, total_pages: 2 });
      const hundred = await okJson<ListBody>(await api.list('?per_page=100'));
      expect(hundred.pagination).toMatchObject({ per_page: 100, total_pages: 1 });
    });

    it.each([
      ['per_page=101'],
      ['per_page=0'],
      ['per_page=-1'],
      ['per_page=abc'],
      ['per_page=1e3'],
      ['per_page=1.5'],
      ['per_page=0x10'],
      ['per_page=%2010'],
      ['per_page='],
      ['per_page=99999999999999999999'],
      ['per_page=1&per_page=2'],
      ['page=0'],
      ['page=-1'],
      ['page=abc'],
      ['page=1e3'],
      ['site_id=abc'],
    ])('refuses ?%s with 400 {error, message}', async (query) => {
      const api = await freshSite();
      const body = await expectError(await api.list(`?${query}`), 400);
      expect(keys(body)).toEqual(['error', 'message']);
    });
  });
});
