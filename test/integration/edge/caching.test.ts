import { randomBytes } from 'node:crypto';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { siteFiles } from '../../../src/files/tables.js';
import { eventually } from '../../support/eventually.js';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  upload,
  uploadBinary,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

// HTTP caching as CDNs and browsers expect it, HEAD, Vary and precompressed answers, and the
// files the edge never serves (SQLite databases).

const REVALIDATE = 'public, max-age=0, must-revalidate';
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Text of ~4 KB that compresses well (repeated lines), different per call. */
const compressibleText = (tag: string) =>
  Array.from({ length: 80 }, (_, i) => `/* ${tag} line ${i}: the quick brown fox jumps */`).join('\n');

describe.each(backends)('edge caching headers and compression (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  const host = () => `${site.slug}.localhost:8080`;
  const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
    hp.request(path, { host: host(), headers, method });

  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('caching');
    await upload(hp, site, 'index.html', '<h1>home</h1>');
    await upload(hp, site, '404.html', '<h1>lost</h1>');
  });
  afterAll(() => hp?.stop());

  describe('Cache-Control by kind of file', () => {
    const cases: Array<[string, string]> = [
      ['page.html', REVALIDATE],
      ['assets/index.3f2a9c1b.html', REVALIDATE], // HTML always revalidates, fingerprint or not
      ['assets/app.3f2a9c1b.js', IMMUTABLE], // hex content hash (webpack)
      ['assets/index-BdOrXo1B.js', IMMUTABLE], // base64url content hash (Vite, Rollup)
      ['assets/chunk.0a1b2c3d4e5f.css', IMMUTABLE],
      ['style.css', REVALIDATE],
      ['assets/jquery-minified.js', REVALIDATE], // a word, not a hash
      ['report-20240101.txt', REVALIDATE], // a date, not a hash
      ['data.json', REVALIDATE],
    ];
    it.each(cases)('%s → %s', async (path, expected) => {
      await upload(hp, site, path, `content of ${path}`);
      const res = await get(`/${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe(expected);
    });

    it('sends no-cache and no validators with a 404 page', async () => {
      const res = await get('/nothing-here.html');
      expect(res.status).toBe(404);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('etag')).toBeNull();
      expect(res.headers.get('last-modified')).toBeNull();
    });
  });

  describe('Last-Modified and If-Modified-Since', () => {
    let lastModified: string;
    beforeAll(async () => {
      const before = Math.floor(Date.now() / 1000) * 1000;
      await upload(hp, site, 'dated.html', 'dated');
      const res = await get('/dated.html');
      lastModified = res.headers.get('last-modified') ?? '';
      expect(lastModified).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
      // The upload's time, to the second (HTTP dates have no fractions).
      expect(Date.parse(lastModified)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(lastModified)).toBeLessThanOrEqual(Date.now());
    });

    it('answers If-Modified-Since at or after Last-Modified with 304 and no body', async () => {
      for (const since of [lastModified, new Date(Date.parse(lastModified) + 60_000).toUTCString()]) {
        const res = await get('/dated.html', { 'if-modified-since': since });
        expect(res.status, since).toBe(304);
        expect(res.headers.get('last-modified')).toBe(lastModified);
        expect(await res.text()).toBe('');
      }
    });

    it('answers If-Modified-Since before Last-Modified, or unparsable, with 200', async () => {
      const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
      for (const since of [earlier, 'not a date']) {
        const res = await get('/dated.html', { 'if-modified-since': since });
        expect(res.status, since).toBe(200);
        expect(await res.text()).toBe('dated');
      }
    });

    it('lets If-None-Match decide when both are sent (RFC 9110)', async () => {
      const res = await get('/dated.html', { 'if-none-match': '"other"', 'if-modified-since': lastModified });
      expect(res.status).toBe(200);
    });

    it('honours If-Range with the current Last-Modified date, not an older one', async () => {
      const current = await get('/dated.html', { range: 'bytes=0-1', 'if-range': lastModified });
      expect(current.status).toBe(206);
      expect(await current.text()).toBe('da');
      const older = new Date(Date.parse(lastModified) - 1000).toUTCString();
      const stale = await get('/dated.html', { range: 'bytes=0-1', 'if-range': older });
      expect(stale.status).toBe(200);
    });
  });

  describe('HEAD', () => {
    it('answers HEAD with the headers of GET and no body, for a file and a 404 page', async () => {
      await upload(hp, site, 'head.css', compressibleText('head'));
      for (const [path, status] of [
        ['/head.css', 200],
        ['/no-such-page', 404],
      ] as const) {
        const got = await get(path);
        const head = await get(path, {}, 'HEAD');
        expect(head.status, path).toBe(status);
        for (const name of [
          'content-type',
          'content-length',
          'etag',
          'last-modified',
          'cache-control',
          'vary',
        ])
          expect(head.headers.get(name), `${path} ${name}`).toBe(got.headers.get(name));
        expect(await head.text()).toBe('');
      }
    });
  });

  describe('Vary', () => {
    it('sends Vary: Accept-Encoding on text that may be compressed', async () => {
      await upload(hp, site, 'vary/big.js', compressibleText('vary'));
      expect((await get('/vary/big.js')).headers.get('vary')).toBe('Accept-Encoding');
    });

    it('sends no Vary where the answer never differs: images, small text', async () => {
      const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), randomBytes(4000)]);
      await uploadBinary(hp, site, 'vary/image.png', png);
      await upload(hp, site, 'vary/small.css', 'a{}');
      for (const path of ['/vary/image.png', '/vary/small.css'])
        expect((await get(path, { 'accept-encoding': 'br, gzip' })).headers.get('vary'), path).toBeNull();
    });
  });

  describe('precompressed answers', () => {
    const text = compressibleText('compressed');
    let identityEtag: string;
    beforeAll(async () => {
      await upload(hp, site, 'zip/app.js', text);
      identityEtag = (await get('/zip/app.js')).headers.get('etag') ?? '';
    });

    /** GETs until the variant is ready (it is computed once, in the background, after a first request). */
    const compressedAnswer = (encoding: string, accept: string) =>
      eventually(`${encoding} variant`, async () => {
        const res = await get('/zip/app.js', { 'accept-encoding': accept });
        return res.headers.get('content-encoding') === encoding ? res : undefined;
      });

    it('serves brotli to a client that accepts it, smaller, with its own ETag', async () => {
      const res = await compressedAnswer('br', 'gzip, deflate, br');
      const body = Buffer.from(await res.arrayBuffer());
      expect(body.length).toBeLessThan(Buffer.byteLength(text) / 2);
      expect(res.headers.get('content-length')).toBe(String(body.length));
      expect(brotliDecompressSync(body).toString()).toBe(text);
      expect(res.headers.get('vary')).toBe('Accept-Encoding');
      expect(res.headers.get('etag')).toBe(identityEtag.replace(/"$/, '-br"'));
      expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    });

    it('serves gzip to a client that accepts gzip only', async () => {
      const res = await compressedAnswer('gzip', 'gzip');
      expect(gunzipSync(Buffer.from(await res.arrayBuffer())).toString()).toBe(text);
      expect(res.headers.get('etag')).toBe(identityEtag.replace(/"$/, '-gz"'));
    });

    it('serves identity bytes without Accept-Encoding, when refused with q=0, and for a Range', async () => {
      await compressedAnswer('br', 'br');
      const cases: Array<Record<string, string>> = [
        {},
        { 'accept-encoding': 'br;q=0, gzip;q=0' },
        { 'accept-encoding': 'identity' },
        { 'accept-encoding': 'br', range: 'bytes=0-99' },
      ];
      for (const headers of cases) {
        const res = await get('/zip/app.js', headers);
        expect(res.headers.get('content-encoding'), JSON.stringify(headers)).toBeNull();
        const expected = 'range' in headers ? text.slice(0, 100) : text;
        expect(await res.text()).toBe(expected);
      }
    });

    it('answers If-None-Match with a compressed variant’s ETag with 304', async () => {
      const etag = (await compressedAnswer('br', 'br')).headers.get('etag') ?? '';
      const res = await get('/zip/app.js', { 'accept-encoding': 'br', 'if-none-match': etag });
      expect(res.status).toBe(304);
      expect(res.headers.get('etag')).toBe(etag);
    });

    it('answers HEAD for the compressed variant with its headers and no body', async () => {
      const got = await compressedAnswer('br', 'br');
      const head = await get('/zip/app.js', { 'accept-encoding': 'br' }, 'HEAD');
      expect(head.headers.get('content-encoding')).toBe('br');
      expect(head.headers.get('content-length')).toBe(got.headers.get('content-length'));
      expect(await head.text()).toBe('');
    });

    it('serves the new bytes compressed after an overwrite, never the old variant', async () => {
      await compressedAnswer('br', 'br');
      const next = compressibleText('overwritten');
      await upload(hp, site, 'zip/app.js', next);
      const first = await get('/zip/app.js', { 'accept-encoding': 'br' });
      const body = Buffer.from(await first.arrayBuffer());
      const decoded = first.headers.get('content-encoding') === 'br' ? brotliDecompressSync(body) : body;
      expect(decoded.toString()).toBe(next);
    });
  });

  describe('request metrics (tallied per request, folded in when scraped)', () => {
    it('counts each site request once, in the counter and the duration histogram', async () => {
      const labels = { role: 'all', method: 'GET', route: 'edge', status: '200' };
      const read = async () => {
        const text = await scrapeMetrics(hp);
        return [
          metricValue(text, 'hostplane_http_requests_total', labels),
          metricValue(text, 'hostplane_http_request_duration_seconds_count', labels),
          metricValue(text, 'hostplane_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }),
          metricValue(text, 'hostplane_http_request_duration_seconds_bucket', { ...labels, le: '10' }),
        ];
      };
      const before = await read();
      for (let i = 0; i < 3; i++) expect((await get('/')).status).toBe(200);
      const after = await read();
      expect(after.map((v, i) => v - (before[i] ?? 0))).toEqual([3, 3, 3, 3]);
      // Scraping again adds nothing.
      expect(await read()).toEqual(after);
    });
  });

  describe('SQLite database files are never served', () => {
    const secret = `SQLITE-SECRET-${randomBytes(6).toString('hex')}`;
    const stored = [
      'data.db',
      'DATA.DB',
      'app.sqlite',
      'app.sqlite3',
      'data.db-wal',
      'app.sqlite-shm',
      'data.db-journal',
      'data.db.',
      'stores.db/index.html',
    ];
    beforeAll(async () => {
      // Uploads refuse these names; the SQLite domain's files reach the index another way. Rows
      // pointing at real bytes stand for them, plus a control row the edge does serve.
      await upload(hp, site, 'db-bytes.txt', secret);
      const hash = ((await get('/db-bytes.txt')).headers.get('etag') ?? '').replaceAll('"', '');
      expect(hash).toMatch(/^[0-9a-f]{64}$/);
      for (const path of [...stored, 'control.bin']) {
        const segments = path.split('/');
        await hp.services.store.db.insert(siteFiles).values({
          siteId: site.siteId,
          path,
          kind: 'file',
          name: segments.at(-1) ?? path,
          parent: segments.length > 1 ? segments.slice(0, -1).join('/') : null,
          depth: segments.length - 1,
          size: Buffer.byteLength(secret),
          blobKey: hash,
          contentType: 'application/octet-stream',
        });
      }
    });

    it('serves the control row with the same bytes (so the checks below can fail)', async () => {
      const res = await get('/control.bin');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(secret);
    });

    const spellings = [
      '/data.db',
      '/DATA.DB',
      '/Data.Db',
      '/data%2edb',
      '/data%2Edb',
      '/%64ata.db',
      '/data.db.',
      '/data.db%2e',
      '/data.db/',
      '/data.db%20',
      '/app.sqlite',
      '/APP.SQLITE3',
      '/data.db-wal',
      '/data.DB-WAL',
      '/app.sqlite-shm',
      '/data.db-journal',
      '/stores.db/',
      '/stores.db/index.html',
      '/stores.db',
    ];
    it.each(spellings)('answers %s with 404 and none of its bytes', async (path) => {
      for (const method of ['GET', 'HEAD']) {
        const res = await get(path, {}, method);
        expect(res.status, method).toBe(404);
        expect(await res.text()).not.toContain(secret);
      }
    });
  });
});
