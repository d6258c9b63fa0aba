import { createHash, randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { siteFiles } from '../../../src/files/tables.js';
import {
  expectError,
  fill,
  listAll,
  okJson,
  publicUrl,
  put,
  snapshot,
  urlPathOf,
  type FileEntry,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';

const MAX_FILE_BYTES = 10485760;

const keys = (value: object) => Object.keys(value).sort();
const paths = (entries: FileEntry[]) => entries.map((e) => e.path);

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

  describe('GET /api/v1/files/get', () => {
    it('returns a text file as UTF-8 with its path, size and url', async () => {
      const api = await freshSite();
      const content = 'héllo\nwörld ✓';
      await put(api, 'notes/readme.txt', content);
      const body = await okJson(await api.get('notes/readme.txt'));
      expect(body).toMatchObject({
        success: true,
        path: 'notes/readme.txt',
        content,
        size: Buffer.byteLength(content),
        url: publicUrl(api.site, 'notes/readme.txt'),
      });
    });

    it('returns a binary file uploaded as base64 as the same base64', async () => {
      const api = await freshSite();
      const bytes = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0xff, 0xfe]), randomBytes(4000)]);
      await put(api, 'img/pixel.png', bytes.toString('base64'), 'base64');
      const body = await okJson<{ content: string; size: number }>(await api.get('img/pixel.png'));
      expect(body.content).toBe(bytes.toString('base64'));
      expect(body.size).toBe(bytes.length);
    });

    it('serves the uploaded binary byte for byte on the site host', async () => {
      const api = await freshSite();
      const bytes = randomBytes(3000);
      await put(api, 'font.woff2', bytes.toString('base64'), 'base64');
      const res = await api.serve('/font.woff2');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('font/woff2');
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    });

    it('returns a text file uploaded as base64 as its text', async () => {
      const api = await freshSite();
      await put(api, 'data.json', Buffer.from('{"a":1}').toString('base64'), 'base64');
      const body = await okJson<{ content: string }>(await api.get('data.json'));
      expect(body.content).toBe('{"a":1}');
    });

    it('returns a .txt file holding bytes that are not UTF-8 without losing any', async () => {
      const api = await freshSite();
      const bytes = Buffer.from([0xff, 0xfe, 0x41, 0x00, 0xc3]);
      await put(api, 'raw.txt', bytes.toString('base64'), 'base64');
      const body = await okJson<{ content: string; encoding: string }>(await api.get('raw.txt'));
      const decoded = Buffer.from(body.content, body.encoding === 'base64' ? 'base64' : 'utf8');
      expect(decoded.equals(bytes)).toBe(true);
    });

    it('answers a missing file with 404 {error: "Not found", message}', async () => {
      const api = await freshSite();
      const body = await expectError(await api.get('nope.html'), 404, 'Not found');
      expect(keys(body)).toEqual(['error', 'message']);
    });

    it('answers a folder path with 404', async () => {
      const api = await freshSite();
      await put(api, 'dir/a.txt', 'a');
      await expectError(await api.get('dir'), 404, 'Not found');
    });
  });

  describe('POST /api/v1/files/upload', () => {
    it('answers exactly {success, message, path, size, url}', async () => {
      const api = await freshSite();
      const body = await okJson(await api.upload({ path: 'index.html', content: '<h1>hi</h1>' }));
      expect(keys(body)).toEqual(['message', 'path', 'size', 'success', 'url']);
      expect(body).toMatchObject({
        success: true,
        path: 'index.html',
        size: 11,
        url: publicUrl(api.site, 'index.html'),
      });
      expect(typeof body.message).toBe('string');
    });

    it('stores base64 content decoded, and reports the decoded size', async () => {
      const api = await freshSite();
      const bytes = randomBytes(999);
      const body = await okJson(
        await api.upload({ path: 'a.png', content: bytes.toString('base64'), encoding: 'base64' }),
      );
      expect(body.size).toBe(999);
    });

    it('accepts an empty file and serves it empty', async () => {
      const api = await freshSite();
      const body = await okJson(await api.upload({ path: 'empty.txt', content: '' }));
      expect(body.size).toBe(0);
      const res = await api.serve('/empty.txt');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('');
      expect((await okJson(await api.get('empty.txt'))).content).toBe('');
    });

    it('accepts base64 wrapped over several lines', async () => {
      const api = await freshSite();
      const bytes = randomBytes(300);
      const wrapped = bytes.toString('base64').replace(/(.{76})/g, '$1\r\n');
      await put(api, 'wrapped.png', wrapped, 'base64');
      expect((await okJson(await api.get('wrapped.png'))).content).toBe(bytes.toString('base64'));
    });

    it('creates missing parent folders, which then appear in the listing', async () => {
      const api = await freshSite();
      await put(api, 'a/b/c/page.html', 'x');
      const entries = await listAll(api);
      expect(entries.filter((e) => e.type === 'folder').map((e) => [e.path, e.parent, e.depth])).toEqual([
        ['a', null, 0],
        ['a/b', 'a', 1],
        ['a/b/c', 'a/b', 2],
      ]);
    });

    it('overwrites a file: new size and content, same file count, bytes adjusted', async () => {
      const api = await freshSite();
      await put(api, 'page.html', 'short');
      await api.serve('/page.html'); // warms the edge cache
      await put(api, 'page.html', 'a much longer page');
      const entries = await listAll(api);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ path: 'page.html', size: 18 });
      expect((await okJson(await api.get('page.html'))).content).toBe('a much longer page');
      expect(await (await api.serve('/page.html')).text()).toBe('a much longer page');
      const after = await snapshot(api);
      expect([after.files, after.bytes]).toEqual([1, 18]);
    });

    it('accepts exactly 10485760 bytes', async () => {
      const api = await freshSite();
      const body = await okJson(await api.upload({ path: 'big.txt', content: 'a'.repeat(MAX_FILE_BYTES) }));
      expect(body.size).toBe(MAX_FILE_BYTES);
      expect((await snapshot(api)).bytes).toBe(MAX_FILE_BYTES);
    });

    it('accepts exactly 10485760 bytes sent as base64, and stores them unchanged', async () => {
      const api = await freshSite();
      const bytes = randomBytes(MAX_FILE_BYTES);
      const body = await okJson(
        await api.upload({ path: 'big.png', content: bytes.toString('base64'), encoding: 'base64' }),
      );
      expect(body.size).toBe(MAX_FILE_BYTES);
      const served = await api.serve('/big.png');
      expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
    });

    it.each([
      ['text', { path: 'big.txt', content: 'a'.repeat(MAX_FILE_BYTES + 1) }],
      [
        'base64',
        {
          path: 'big.png',
          content: Buffer.alloc(MAX_FILE_BYTES + 1, 7).toString('base64'),
          encoding: 'base64',
        },
      ],
      ['multi-byte text', { path: 'big.txt', content: 'é'.repeat(MAX_FILE_BYTES / 2) + 'a' }],
      ['text whose JSON is over the body limit', { path: 'big.txt', content: '"'.repeat(9 * 1024 * 1024) }],
    ])(
      'refuses 10485761 bytes and more (%s) with {error: "File too large", message, max_size_bytes}',
      async (_what, request) => {
        const api = await freshSite();
        await put(api, 'keep.txt', 'keep');
        const before = await snapshot(api);
        const body = await expectError(await api.upload(request), 400, 'File too large');
        expect(keys(body)).toEqual(['error', 'max_size_bytes', 'message']);
        expect(body.max_size_bytes).toBe(MAX_FILE_BYTES);
        expect(await snapshot(api)).toEqual(before);
      },
    );

    it.each(
      'html css js json xml txt jpg jpeg png gif svg webp ico pdf woff woff2 ttf otf HTML Png'.split(' '),
    )('accepts the .%s extension', async (ext) => {
      const api = await freshSite();
      await okJson(await api.upload({ path: `file.${ext}`, content: 'x' }));
    });

    it.each(['exe', 'php', 'sh', 'zip', 'htaccess', 'gitkeep', 'sqlite', 'mp3'])(
      'refuses .%s with 400 "Invalid file type"',
      async (ext) => {
        const api = await freshSite();
        const path = ext === 'htaccess' || ext === 'gitkeep' ? `.${ext}` : `evil.${ext}`;
        await expectError(await api.upload({ path, content: 'x' }), 400, 'Invalid file type');
        expect(await listAll(api)).toEqual([]);
      },
    );

    it('refuses a path without an extension with 400 "Invalid file type"', async () => {
      const api = await freshSite();
      await expectError(await api.upload({ path: 'README', content: 'x' }), 400, 'Invalid file type');
    });

    it.each(['mp4', 'webm', 'mov', 'ogg', 'MP4'])(
      'refuses a .%s video with 400 "Invalid file type" pointing to the video endpoint',
      async (ext) => {
        const api = await freshSite();
        const body = await expectError(
          await api.upload({ path: `clip.${ext}`, content: 'x' }),
          400,
          'Invalid file type',
        );
        expect(body.message).toContain('/api/v1/videos/upload');
      },
    );

    it('refuses a file where a folder exists with 409, changing nothing', async () => {
      const api = await freshSite();
      await put(api, 'page.html/inner.txt', 'x');
      const before = await snapshot(api);
      await expectError(await api.upload({ path: 'page.html', content: 'x' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('refuses a file below a file with 409, changing nothing', async () => {
      const api = await freshSite();
      await put(api, 'a.txt', 'x');
      const before = await snapshot(api);
      await expectError(await api.upload({ path: 'a.txt/b.txt', content: 'x' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it.each([
      ['page.html', 'text/html; charset=utf-8'],
      ['style.css', 'text/css; charset=utf-8'],
      ['app.js', /^(text|application)\/javascript; charset=utf-8$/],
      ['logo.svg', 'image/svg+xml; charset=utf-8'],
      ['doc.pdf', 'application/pdf'],
    ])('serves %s with Content-Type %s', async (path, type) => {
      const api = await freshSite();
      await put(api, path, 'x');
      const res = await api.serve(`/${path}`);
      expect(res.status).toBe(200);
      if (typeof type === 'string') expect(res.headers.get('content-type')).toBe(type);
      else expect(res.headers.get('content-type')).toMatch(type);
    });
  });

  describe('unicode and special names', () => {
    it('stores café/naïve.html and serves it at its percent-encoded URL', async () => {
      const api = await freshSite();
      const body = await okJson(await api.upload({ path: 'café/naïve.html', content: '<p>ok</p>' }));
      expect(body.path).toBe('café/naïve.html');
      expect(body.url).toBe(`http://${api.site.slug}.localhost:8080/caf%C3%A9/na%C3%AFve.html`);
      const res = await api.serve('/caf%C3%A9/na%C3%AFve.html');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('<p>ok</p>');
      expect((await okJson(await api.get('café/naïve.html'))).content).toBe('<p>ok</p>');
      expect(paths(await listAll(api))).toEqual(['café', 'café/naïve.html']);
    });

    it('treats the decomposed (NFD) spelling as the same file as the composed one', async () => {
      const api = await freshSite();
      await put(api, 'cafe\u0301.html', 'one');
      await put(api, 'caf\u00e9.html', 'two');
      const entries = await listAll(api);
      expect(paths(entries)).toEqual(['caf\u00e9.html']);
      expect((await okJson(await api.get('cafe\u0301.html'))).content).toBe('two');
      expect(await (await api.serve('/cafe%CC%81.html')).text()).toBe('two');
    });

    it.each([
      '日本語/ページ.html',
      '🎉.html',
      'my page.html',
      '100%.html',
      'a#b.html',
      'q?.txt',
      "it's & more.txt",
    ])('uploads, lists, gets and serves %j', async (path) => {
      const api = await freshSite();
      await put(api, path, `content of ${path}`);
      const entry = (await listAll(api)).find((e) => e.path === path);
      expect(entry?.url).toBe(publicUrl(api.site, path));
      expect((await okJson(await api.get(path))).content).toBe(`content of ${path}`);
      const res = await api.serve(urlPathOf(path));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(`content of ${path}`);
    });

    it('renames and deletes a unicode file', async () => {
      const api = await freshSite();
      await put(api, 'über.html', 'x');
      await okJson(await api.rename({ old_path: 'über.html', new_path: 'ñandú/ü.html' }));
      expect((await api.serve(urlPathOf('ñandú/ü.html'))).status).toBe(200);
      await okJson(await api.delete('ñandú/ü.html'));
      expect(paths(await listAll(api))).toEqual(['ñandú']);
    });
  });

  describe('POST /api/v1/files/rename', () => {
    it('moves a file: gone at the old path, same size and content at the new one', async () => {
      const api = await freshSite();
      await put(api, 'old.html', 'moving');
      const before = await snapshot(api);
      const body = await okJson(await api.rename({ old_path: 'old.html', new_path: 'new.html' }));
      expect(body.success).toBe(true);
      expect(typeof body.message).toBe('string');
      const entries = await listAll(api);
      expect(entries.map((e) => [e.path, e.size])).toEqual([['new.html', 6]]);
      expect((await okJson(await api.get('new.html'))).content).toBe('moving');
      await expectError(await api.get('old.html'), 404);
      const after = await snapshot(api);
      expect([after.files, after.bytes]).toEqual([before.files, before.bytes]);
    });

    it('keeps the kind of file: a page cannot be renamed to a video extension', async () => {
      const api = await freshSite();
      await put(api, 'page.html', '<p>x</p>');
      const before = await snapshot(api);
      const res = await api.rename({ old_path: 'page.html', new_path: 'page.mp4' });
      await expectError(res, 400);
      expect(await snapshot(api)).toEqual(before);
    });

    it('creates the folders of the new path', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'x');
      await okJson(await api.rename({ old_path: 'a.html', new_path: 'x/y/a.html' }));
      expect(paths(await listAll(api))).toEqual(['x', 'x/y', 'x/y/a.html']);
    });

    it('changes the public URL: the old one 404s on the site host, the new one serves', async () => {
      const api = await freshSite();
      await put(api, 'docs/guide.html', 'guide');
      expect((await api.serve('/docs/guide.html')).status).toBe(200); // cached at the edge
      const body = await okJson(
        await api.rename({ old_path: 'docs/guide.html', new_path: 'help/guide.html' }),
      );
      expect(body.url).toBe(publicUrl(api.site, 'help/guide.html'));
      expect((await api.serve('/docs/guide.html')).status).toBe(404);
      const moved = await api.serve('/help/guide.html');
      expect(moved.status).toBe(200);
      expect(await moved.text()).toBe('guide');
    });

    it('answers a missing source with 404, changing nothing', async () => {
      const api = await freshSite();
      await put(api, 'other.html', 'x');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'ghost.html', new_path: 'b.html' }), 404, 'Not found');
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers 409 when a file exists at new_path, and both files keep their content', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'A');
      await put(api, 'b.html', 'B');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'a.html', new_path: 'b.html' }), 409);
      expect(await snapshot(api)).toEqual(before);
      expect((await okJson(await api.get('a.html'))).content).toBe('A');
      expect((await okJson(await api.get('b.html'))).content).toBe('B');
    });

    it('answers 409 when a folder exists at new_path', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'A');
      await put(api, 'b.html/inner.txt', 'x');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'a.html', new_path: 'b.html' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers 409 when new_path lies below a file', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'A');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'a.html', new_path: 'a.html/b.html' }), 409);
      expect(await snapshot(api)).toEqual(before);
    });

    it('answers a folder as old_path with 404 (use rename-folder)', async () => {
      const api = await freshSite();
      await put(api, 'dir/a.html', 'A');
      const before = await snapshot(api);
      await expectError(await api.rename({ old_path: 'dir', new_path: 'dir2.html' }), 404);
      expect(await snapshot(api)).toEqual(before);
    });

    it('refuses a new_path with a disallowed extension with 400 "Invalid file type"', async () => {
      const api = await freshSite();
      await put(api, 'a.html', 'A');
      const before = await snapshot(api);
      await expectError(
        await api.rename({ old_path: 'a.html', new_path: 'a.exe' }),
        400,
        'Invalid file type',
      );
      expect(await snapshot(api)).toEqual(before);
    });
  });

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

    const json = (body: string) => ({ method: 'POST', body, contentType: 'application/json' });
    const cases: Array<[string, (a: FilesApi) => Promise<Response>, number?]> = [
      // upload
      ['upload: malformed JSON', (a) => a.raw('/api/v1/files/upload', json('{"path": "a.html",'))],
      ['upload: JSON string body', (a) => a.raw('/api/v1/files/upload', json('"a.html"'))],
      ['upload: JSON array body', (a) => a.raw('/api/v1/files/upload', json('[]'))],
      ['upload: JSON null body', (a) => a.raw('/api/v1/files/upload', json('null'))],
      ['upload: empty body', (a) => a.raw('/api/v1/files/upload', json(''))],
      [
        'upload: not JSON at all',
        (a) =>
          a.raw('/api/v1/files/upload', {
            method: 'POST',
            body: 'path=a.html&content=x',
            contentType: 'text/plain',
          }),
      ],
      ['upload: path is a number', (a) => a.upload({ path: 5, content: 'x' })],
      ['upload: path is null', (a) => a.upload({ path: null, content: 'x' })],
      ['upload: path is an array', (a) => a.upload({ path: ['a.html'], content: 'x' })],
      ['upload: content is a number', (a) => a.upload({ path: 'a.html', content: 5 })],
      ['upload: content is an object', (a) => a.upload({ path: 'a.html', content: { x: 1 } })],
      ['upload: missing path', (a) => a.upload({ content: 'x' })],
      ['upload: missing content', (a) => a.upload({ path: 'a.html' })],
      ['upload: empty object', (a) => a.upload({})],
      ['upload: unknown encoding', (a) => a.upload({ path: 'a.html', content: 'x', encoding: 'hex' })],
      [
        'upload: invalid base64',
        (a) => a.upload({ path: 'a.png', content: '@@not base64@@', encoding: 'base64' }),
      ],
      ['upload: empty path', (a) => a.upload({ path: '', content: 'x' })],
      ['upload: ".." segment', (a) => a.upload({ path: '../evil.html', content: 'x' })],
      [
        'upload: ".." escaping from a folder',
        (a) => a.upload({ path: 'blog/../../evil.html', content: 'x' }),
      ],
      [
        'upload: ".." overwriting inside the site',
        (a) => a.upload({ path: 'blog/../index.html', content: 'x' }),
      ],
      ['upload: "." segment', (a) => a.upload({ path: './index.html', content: 'x' })],
      ['upload: absolute path', (a) => a.upload({ path: '/index.html', content: 'x' })],
      ['upload: absolute system path', (a) => a.upload({ path: '/etc/passwd.txt', content: 'x' })],
      ['upload: backslash', (a) => a.upload({ path: 'blog\\evil.html', content: 'x' })],
      ['upload: backslash traversal', (a) => a.upload({ path: '..\\..\\evil.html', content: 'x' })],
      ['upload: NUL byte', (a) => a.upload({ path: 'a\u0000.html', content: 'x' })],
      ['upload: NUL before the extension check', (a) => a.upload({ path: 'a.html\u0000.exe', content: 'x' })],
      ['upload: newline', (a) => a.upload({ path: 'a\n.html', content: 'x' })],
      ['upload: empty segment', (a) => a.upload({ path: 'blog//x.html', content: 'x' })],
      ['upload: lone surrogate', (a) => a.upload({ path: '\ud800.html', content: 'x' })],
      ['upload: segment over 255 bytes', (a) => a.upload({ path: `${'a'.repeat(256)}.html`, content: 'x' })],
      [
        'upload: path over 1024 bytes',
        (a) => a.upload({ path: `${'abc/'.repeat(300)}x.html`, content: 'x' }),
      ],
      ['upload: .gitkeep', (a) => a.upload({ path: 'blog/.gitkeep', content: '' })],
      // get
      ['get: no path', (a) => a.raw('/api/v1/files/get')],
      ['get: empty path', (a) => a.raw('/api/v1/files/get?path=')],
      ['get: ".."', (a) => a.raw('/api/v1/files/get?path=..%2F..%2Fetc%2Fpasswd')],
      ['get: absolute', (a) => a.raw('/api/v1/files/get?path=%2Findex.html')],
      ['get: backslash', (a) => a.raw('/api/v1/files/get?path=blog%5Cpost.html')],
      ['get: NUL byte', (a) => a.raw('/api/v1/files/get?path=index%00.html')],
      ['get: two paths', (a) => a.raw('/api/v1/files/get?path=index.html&path=blog%2Fpost.html')],
      // The query parser decodes leniently (to U+FFFD): a legal name that names no file.
      ['get: bad percent-encoding', (a) => a.raw('/api/v1/files/get?path=%E0%A4%A.html'), 404],
      // rename
      ['rename: malformed JSON', (a) => a.raw('/api/v1/files/rename', json('{old_path: index.html}'))],
      ['rename: old_path is a number', (a) => a.rename({ old_path: 5, new_path: 'x.html' })],
      ['rename: new_path is a boolean', (a) => a.rename({ old_path: 'index.html', new_path: true })],
      ['rename: missing new_path', (a) => a.rename({ old_path: 'index.html' })],
      ['rename: missing old_path', (a) => a.rename({ new_path: 'x.html' })],
      ['rename: ".." in new_path', (a) => a.rename({ old_path: 'index.html', new_path: '../x.html' })],
      ['rename: ".." in old_path', (a) => a.rename({ old_path: '../index.html', new_path: 'x.html' })],
      ['rename: absolute new_path', (a) => a.rename({ old_path: 'index.html', new_path: '/tmp/x.html' })],
      ['rename: backslash in new_path', (a) => a.rename({ old_path: 'index.html', new_path: 'a\\x.html' })],
      ['rename: NUL in new_path', (a) => a.rename({ old_path: 'index.html', new_path: 'x\u0000.html' })],
      ['rename: NUL in old_path', (a) => a.rename({ old_path: 'index.html\u0000', new_path: 'x.html' })],
      ['rename: new_path without extension', (a) => a.rename({ old_path: 'index.html', new_path: 'index' })],
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
