import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  listAll,
  okJson,
  publicUrl,
  put,
  snapshot,
  type FilesApi,
  hostplaneWithFreshSites,
} from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';

const MAX_FILE_BYTES = 10485760;

const keys = (value: object) => Object.keys(value).sort();

describe.each(backends)('files API (%s)', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, 'files');
  const { freshSite } = fixture;

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
