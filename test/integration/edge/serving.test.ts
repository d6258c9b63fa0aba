import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customDomains } from '../../../src/platform/tables.js';
import {
  apiKeyHeader,
  backends,
  metricValue,
  rawRequest,
  scrapeMetrics,
  startHostplane,
  upload,
  uploadBinary,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

const hostOf = (site: TestSite) => `${site.slug}.localhost:8080`;

/** Uploads a video through POST /api/v1/videos/upload (multipart/form-data). */
async function uploadVideo(hp: TestHostplane, site: TestSite, sitePath: string, bytes: Buffer) {
  const boundary = `----hostplane${randomBytes(8).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\n${sitePath}\r\n`),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload.bin"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    ),
    bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await rawRequest(hp.port, '/api/v1/videos/upload', {
    method: 'POST',
    headers: {
      ...apiKeyHeader(site),
      host: 'localhost:8080',
      'content-type': `multipart/form-data; boundary=${boundary}`,
    },
    body,
  });
  if (res.status !== 200) throw new Error(`video upload ${sitePath} → ${res.status} ${await res.text()}`);
}

async function apiPost(hp: TestHostplane, site: TestSite, path: string, json: unknown) {
  const res = await hp.request(path, { method: 'POST', headers: apiKeyHeader(site), json });
  if (res.status !== 200) throw new Error(`${path} → ${res.status} ${await res.text()}`);
}

async function apiDelete(hp: TestHostplane, site: TestSite, pathAndQuery: string) {
  const res = await hp.request(pathAndQuery, { method: 'DELETE', headers: apiKeyHeader(site) });
  if (res.status !== 200) throw new Error(`${pathAndQuery} → ${res.status} ${await res.text()}`);
}

/** Sends raw request text over TCP and returns everything the server wrote before closing. */
function rawExchange(port: number, requestText: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(requestText));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

/** The bytes after the header block of a raw HTTP response. */
const afterHeaders = (raw: Buffer) => raw.subarray(raw.indexOf('\r\n\r\n') + 4);

const bytesOf = async (res: Response) => Buffer.from(await res.arrayBuffer());

describe.each(backends)('edge serving (%s)', (backend) => {
  let hp: TestHostplane;
  let alpha: TestSite;
  let beta: TestSite;
  const get = (site: TestSite | string, path: string, headers: Record<string, string> = {}) =>
    hp.request(path, { host: typeof site === 'string' ? site : hostOf(site), headers });

  beforeAll(async () => {
    hp = await startHostplane(backend);
    alpha = await hp.createSite('alpha');
    beta = await hp.createSite('beta');
    await upload(hp, alpha, 'index.html', '<h1>alpha home</h1>');
    await upload(hp, alpha, 'blog/index.html', '<h1>alpha blog</h1>');
    await upload(hp, alpha, 'docs/page.html', '<h1>docs page</h1>');
    await upload(hp, alpha, '404.html', '<h1>alpha has lost this page</h1>');
    await upload(hp, alpha, 'secret.html', 'ALPHA-ONLY-SECRET');
    await upload(hp, beta, 'index.html', '<h1>beta home</h1>');
  });
  afterAll(() => hp?.stop());

  describe('host → site', () => {
    it('answers 404 for a subdomain that names no site', async () => {
      const res = await get('no-such-site.localhost:8080', '/');
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain('alpha');
    });

    it('serves each site on its own subdomain', async () => {
      expect(await (await get(alpha, '/')).text()).toBe('<h1>alpha home</h1>');
      expect(await (await get(beta, '/')).text()).toBe('<h1>beta home</h1>');
    });

    it('serves a site on a custom domain listed in the custom_domains table', async () => {
      await hp.services.store.db
        .insert(customDomains)
        .values({ hostname: 'www.alpha.test', siteId: alpha.siteId });
      const res = await get('www.alpha.test', '/blog/');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('<h1>alpha blog</h1>');
    });

    it('matches a custom domain regardless of case, port and a trailing dot', async () => {
      await hp.services.store.db
        .insert(customDomains)
        .values({ hostname: 'shop.alpha.test', siteId: alpha.siteId });
      for (const host of ['SHOP.Alpha.Test', 'shop.alpha.test:8443', 'shop.alpha.test.']) {
        const res = await get(host, '/');
        expect(res.status, host).toBe(200);
        expect(await res.text()).toBe('<h1>alpha home</h1>');
      }
    });

    it('does not serve a site on a domain that is not in the table', async () => {
      const res = await get('www.unknown-domain.test', '/');
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain('alpha home');
    });
  });

  describe('absolute-form request targets: the target’s authority wins over Host (RFC 9112 §3.2.2)', () => {
    /** One request over a raw socket (fetch cannot send an absolute-form target). */
    const raw = async (target: string, host: string, headers = '') => {
      const response = await rawExchange(
        hp.port,
        `GET ${target} HTTP/1.1\r\nHost: ${host}\r\n${headers}Connection: close\r\n\r\n`,
      );
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response.toString('latin1'))?.[1]);
      return { status, body: afterHeaders(response).toString('utf8') };
    };

    it('serves the site the target names, whatever Host says, and the host cache stays right', async () => {
      // Warm the host cache with Host: alpha first, so a cached Host cannot decide.
      expect(await (await get(alpha, '/')).text()).toBe('<h1>alpha home</h1>');
      const viaTarget = await raw(`http://${hostOf(beta)}/`, hostOf(alpha));
      expect(viaTarget).toEqual({ status: 200, body: '<h1>beta home</h1>' });
      // Alpha's file is not reachable through beta's name, nor beta's through alpha's Host.
      expect((await raw(`http://${hostOf(beta)}/secret.html`, hostOf(alpha))).body).not.toContain('ALPHA');
      expect(await raw(`HTTP://${hostOf(alpha).toUpperCase()}/secret.html`, hostOf(beta))).toEqual({
        status: 200,
        body: 'ALPHA-ONLY-SECRET',
      });
      // Origin-form requests after them still go by Host.
      expect(await (await get(alpha, '/')).text()).toBe('<h1>alpha home</h1>');
      expect(await (await get(beta, '/')).text()).toBe('<h1>beta home</h1>');
    });

    it('sends an absolute target naming the API host to the API, and one naming a site to the edge', async () => {
      const info = await raw(
        'http://localhost:8080/api/v1/hosting-info',
        hostOf(alpha),
        `X-API-Key: ${alpha.apiKey}\r\n`,
      );
      expect(info.status).toBe(200);
      expect(JSON.parse(info.body)).toMatchObject({ success: true });
      expect(await raw(`http://${hostOf(alpha)}/blog/`, 'localhost:8080')).toEqual({
        status: 200,
        body: '<h1>alpha blog</h1>',
      });
    });

    it('refuses an absolute target that names no http(s) host with 400, serving nothing', async () => {
      for (const target of [
        `ftp://${hostOf(alpha)}/`,
        `http://user@${hostOf(alpha)}/`,
        'http:///index.html',
        'http://[bad/',
      ]) {
        const res = await raw(target, hostOf(alpha));
        expect(res.status, target).toBe(400);
        expect(res.body, target).not.toContain('alpha');
      }
      const counted = metricValue(await scrapeMetrics(hp), 'hostplane_http_requests_total', {
        role: 'all',
        method: 'GET',
        route: 'request_target',
        status: '400',
      });
      expect(counted).toBeGreaterThanOrEqual(4);
    });
  });

  describe('paths', () => {
    it('serves index.html at /', async () => {
      const res = await get(alpha, '/');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('<h1>alpha home</h1>');
    });

    it('serves blog/index.html at /blog/', async () => {
      const res = await get(alpha, '/blog/');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('<h1>alpha blog</h1>');
    });

    it('serves a nested file at its path', async () => {
      const res = await get(alpha, '/docs/page.html');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('<h1>docs page</h1>');
    });

    it('redirects /blog to /blog/ with 301 when blog/index.html exists', async () => {
      const res = await get(alpha, '/blog');
      expect(res.status).toBe(301);
      expect(res.headers.get('location')).toBe('/blog/');
    });

    it('keeps the query string when redirecting /blog to /blog/', async () => {
      const res = await get(alpha, '/blog?ref=home&x=1');
      expect(res.status).toBe(301);
      expect(res.headers.get('location')).toBe('/blog/?ref=home&x=1');
    });

    it('answers 404 for /docs when docs/ has no index.html', async () => {
      const res = await get(alpha, '/docs');
      expect(res.status).toBe(404);
      expect(res.headers.get('location')).toBeNull();
    });

    it('answers 404 for /docs/ when docs/ has no index.html', async () => {
      expect((await get(alpha, '/docs/')).status).toBe(404);
    });

    it('redirects only to a path on the same host, even for a path starting with //', async () => {
      await upload(hp, alpha, 'evil.example/index.html', 'folder named like a host');
      const res = await get(alpha, '//evil.example');
      expect(res.status).toBe(301);
      const location = res.headers.get('location') ?? '';
      expect(location).toMatch(/^\/[^/\\]/);
      expect(new URL(location, 'http://alpha.localhost:8080').host).toBe('alpha.localhost:8080');
    });
  });

  describe('content types', () => {
    const textCases: Array<[string, string]> = [
      ['page.html', 'text/html; charset=utf-8'],
      ['style.css', 'text/css; charset=utf-8'],
      ['app.js', 'text/javascript; charset=utf-8'],
      ['data.json', 'application/json; charset=utf-8'],
      ['logo.svg', 'image/svg+xml; charset=utf-8'],
      ['notes.txt', 'text/plain; charset=utf-8'],
      ['feed.xml', 'application/xml; charset=utf-8'],
    ];
    it.each(textCases)('serves %s as %s', async (name, type) => {
      await upload(hp, alpha, `types/${name}`, `content of ${name}`);
      const res = await get(alpha, `/types/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect(await res.text()).toBe(`content of ${name}`);
    });

    const binaryCases: Array<[string, string]> = [
      ['image.png', 'image/png'],
      ['photo.jpg', 'image/jpeg'],
      ['font.woff2', 'font/woff2'],
      ['doc.pdf', 'application/pdf'],
    ];
    it.each(binaryCases)('serves %s as %s, byte for byte', async (name, type) => {
      const bytes = Buffer.concat([Buffer.from([0x89, 0x00, 0xff, 0x0d, 0x0a]), randomBytes(300)]);
      await uploadBinary(hp, alpha, `types/${name}`, bytes);
      const res = await get(alpha, `/types/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect((await bytesOf(res)).equals(bytes)).toBe(true);
    });

    const videoCases: Array<[string, string]> = [
      ['clip.mp4', 'video/mp4'],
      ['clip.webm', 'video/webm'],
      ['clip.mov', 'video/quicktime'],
    ];
    it.each(videoCases)('serves the video %s as %s', async (name, type) => {
      const bytes = randomBytes(4096);
      await uploadVideo(hp, alpha, `videos/${name}`, bytes);
      const res = await get(alpha, `/videos/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect((await bytesOf(res)).equals(bytes)).toBe(true);
    });

    it('tells browsers not to sniff a different type', async () => {
      const res = await get(alpha, '/');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    });
  });

  describe('ETag and conditional requests', () => {
    it('sends a strong, quoted ETag', async () => {
      const res = await get(alpha, '/');
      const etag = res.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(etag?.startsWith('W/')).toBe(false);
    });

    it('answers If-None-Match with the current ETag with 304 and no body', async () => {
      const etag = (await get(alpha, '/')).headers.get('etag') ?? '';
      const res = await get(alpha, '/', { 'if-none-match': etag });
      expect(res.status).toBe(304);
      expect(res.headers.get('etag')).toBe(etag);
      const raw = await rawExchange(
        hp.port,
        `GET / HTTP/1.1\r\nHost: ${hostOf(alpha)}\r\nIf-None-Match: ${etag}\r\nConnection: close\r\n\r\n`,
      );
      expect(raw.toString('latin1')).toMatch(/^HTTP\/1\.1 304 /);
      expect(afterHeaders(raw).length).toBe(0);
    });

    it('answers 304 when the current ETag is one of several listed, or given as weak', async () => {
      const etag = (await get(alpha, '/')).headers.get('etag') ?? '';
      expect((await get(alpha, '/', { 'if-none-match': `"other", ${etag}` })).status).toBe(304);
      expect((await get(alpha, '/', { 'if-none-match': `W/${etag}` })).status).toBe(304);
    });

    it('answers 200 with the body when If-None-Match names another ETag', async () => {
      const res = await get(alpha, '/', { 'if-none-match': '"not-the-current-one"' });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('<h1>alpha home</h1>');
    });

    it('gives a changed file a new ETag, and the old ETag no longer gets 304', async () => {
      await upload(hp, alpha, 'etag/changing.html', 'version one');
      const before = (await get(alpha, '/etag/changing.html')).headers.get('etag') ?? '';
      await upload(hp, alpha, 'etag/changing.html', 'version two');
      const res = await get(alpha, '/etag/changing.html', { 'if-none-match': before });
      expect(res.status).toBe(200);
      expect(res.headers.get('etag')).not.toBe(before);
      expect(await res.text()).toBe('version two');
    });

    it('gives identical content the same ETag at any path', async () => {
      await upload(hp, alpha, 'etag/a.txt', 'same bytes');
      await upload(hp, alpha, 'etag/b.txt', 'same bytes');
      const a = (await get(alpha, '/etag/a.txt')).headers.get('etag');
      const b = (await get(alpha, '/etag/b.txt')).headers.get('etag');
      expect(a).toBe(b);
    });
  });

  describe('Range requests', () => {
    const content = '0123456789abcdefghijklmnopqrstuvwxyz';
    beforeAll(() => upload(hp, alpha, 'range/abc.txt', content));

    it('advertises Accept-Ranges: bytes', async () => {
      expect((await get(alpha, '/range/abc.txt')).headers.get('accept-ranges')).toBe('bytes');
    });

    it('answers bytes=0-9 with 206, Content-Range and exactly those bytes', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=0-9' });
      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe(`bytes 0-9/${content.length}`);
      expect(res.headers.get('content-length')).toBe('10');
      expect(await res.text()).toBe('0123456789');
    });

    it('answers a suffix range with the last bytes', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=-5' });
      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe(`bytes 31-35/${content.length}`);
      expect(await res.text()).toBe('vwxyz');
    });

    it('answers an open-ended range with the rest of the file', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=30-' });
      expect(res.status).toBe(206);
      expect(await res.text()).toBe('uvwxyz');
    });

    it('clamps a range that runs past the end', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=32-1000' });
      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe(`bytes 32-35/${content.length}`);
      expect(await res.text()).toBe('wxyz');
    });

    it('answers an unsatisfiable range with 416 and Content-Range: bytes */size', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=100-200' });
      expect(res.status).toBe(416);
      expect(res.headers.get('content-range')).toBe(`bytes */${content.length}`);
    });

    it('ignores a malformed Range header and sends the whole file', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'pages=1-2' });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(content);
    });

    it('sends the whole file when If-Range names an older ETag', async () => {
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=0-9', 'if-range': '"stale"' });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(content);
    });

    it('honours the range when If-Range names the current ETag', async () => {
      const etag = (await get(alpha, '/range/abc.txt')).headers.get('etag') ?? '';
      const res = await get(alpha, '/range/abc.txt', { range: 'bytes=0-9', 'if-range': etag });
      expect(res.status).toBe(206);
      expect(await res.text()).toBe('0123456789');
    });
  });

  describe('HEAD', () => {
    it('answers HEAD with the headers of GET', async () => {
      const got = await get(alpha, '/');
      const head = await hp.request('/', { method: 'HEAD', host: hostOf(alpha) });
      expect(head.status).toBe(200);
      for (const name of ['content-type', 'content-length', 'etag', 'accept-ranges']) {
        expect(head.headers.get(name), name).toBe(got.headers.get(name));
      }
    });

    it('sends no body for HEAD', async () => {
      const raw = await rawExchange(
        hp.port,
        `HEAD / HTTP/1.1\r\nHost: ${hostOf(alpha)}\r\nConnection: close\r\n\r\n`,
      );
      expect(raw.toString('latin1')).toMatch(/^HTTP\/1\.1 200 /);
      expect(raw.toString('latin1')).toMatch(/\r\ncontent-length: 19\r\n/i);
      expect(afterHeaders(raw).length).toBe(0);
    });
  });

  describe('not found', () => {
    it("serves the site's own 404.html with status 404", async () => {
      const res = await get(alpha, '/no/such/page.html');
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await res.text()).toBe('<h1>alpha has lost this page</h1>');
    });

    it('serves a default 404 page when the site has no 404.html', async () => {
      const res = await get(beta, '/no/such/page.html');
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await res.text()).toMatch(/404/);
    });

    it('does not cache or tag a 404 page as the requested resource', async () => {
      const res = await get(alpha, '/missing.html');
      expect(res.status).toBe(404);
      expect(res.headers.get('etag')).toBeNull();
    });
  });

  describe('client-controlled cache keys', () => {
    const manifestLookups = async () => {
      const text = await scrapeMetrics(hp);
      return (
        (metricValue(text, 'hostplane_edge_cache_events_total', { cache: 'manifest', result: 'miss' }) ?? 0) +
        (metricValue(text, 'hostplane_edge_cache_events_total', { cache: 'manifest', result: 'hit' }) ?? 0)
      );
    };

    it('answers a path longer than any stored path with 404 without looking it up', async () => {
      const before = await manifestLookups();
      const res = await get(alpha, `/${'a'.repeat(5000)}`);
      const after = await manifestLookups();
      expect(res.status).toBe(404);
      // Only the site's 404.html is looked up, never the oversized path (nor its /index.html).
      expect(after - before).toBe(1);
    });

    it('does not treat an oversized or malformed Host as a site', async () => {
      for (const host of [
        `${'x'.repeat(300)}.localhost:8080`,
        'alpha .localhost:8080',
        'al_pha.localhost:8080',
      ]) {
        const res = await hp.request('/', { host });
        expect(res.status, host.slice(0, 20)).toBe(404);
        expect(await res.text()).not.toContain('alpha home');
      }
    });
  });

  describe('path traversal', () => {
    it('serves the secret on its own site (so the checks below can fail)', async () => {
      expect(await (await get(alpha, '/secret.html')).text()).toBe('ALPHA-ONLY-SECRET');
    });

    const attempts = [
      '/../secret.html',
      '/../alpha/secret.html',
      '/%2e%2e/secret.html',
      '/%2E%2E%2Fsecret.html',
      '/blog/%2e%2e/%2e%2e/secret.html',
      '/..%2f..%2fsecret.html',
      '/.%2e/secret.html',
      '/%252e%252e/secret.html',
      '/%c0%ae%c0%ae/secret.html',
      '/secret.html%00',
      '/%00',
      '/secret.html%00.png',
      '/%5c..%5csecret.html',
      '/..%5csecret.html',
      '/..\\secret.html',
      '/%',
      '/blobs/..',
    ];
    it.each(attempts)('answers %s on another site with a 4xx and no foreign bytes', async (path) => {
      const res = await get(beta, path);
      const body = await res.text();
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(body).not.toContain('ALPHA-ONLY-SECRET');
    });
  });

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

  describe('large files (over 1 MiB, streamed from the blob store)', () => {
    const big = randomBytes(3 * 1024 * 1024 + 123);
    beforeAll(() => uploadVideo(hp, alpha, 'videos/big.mp4', big));

    it('streams the whole file byte for byte', async () => {
      const res = await get(alpha, '/videos/big.mp4');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-length')).toBe(String(big.length));
      const body = await bytesOf(res);
      expect(createHash('sha256').update(body).digest('hex')).toBe(
        createHash('sha256').update(big).digest('hex'),
      );
    });

    it('streams a range from the middle with 206', async () => {
      const start = 1024 * 1024 + 7;
      const end = start + 200_000 - 1;
      const res = await get(alpha, '/videos/big.mp4', { range: `bytes=${start}-${end}` });
      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${big.length}`);
      expect((await bytesOf(res)).equals(big.subarray(start, end + 1))).toBe(true);
    });

    it('streams a suffix range of a large file', async () => {
      const res = await get(alpha, '/videos/big.mp4', { range: 'bytes=-1000' });
      expect(res.status).toBe(206);
      expect((await bytesOf(res)).equals(big.subarray(big.length - 1000))).toBe(true);
    });

    it('keeps large files out of the in-memory blob cache', async () => {
      const before = await scrapeMetrics(hp);
      await get(alpha, '/videos/big.mp4');
      await get(alpha, '/videos/big.mp4');
      const after = await scrapeMetrics(hp);
      for (const result of ['hit', 'miss']) {
        const labels = { cache: 'blob', result };
        expect(metricValue(after, 'hostplane_edge_cache_events_total', labels)).toBe(
          metricValue(before, 'hostplane_edge_cache_events_total', labels),
        );
      }
    });
  });

  describe('methods', () => {
    it('refuses POST to a site with 405 and Allow: GET, HEAD', async () => {
      const res = await hp.request('/', { method: 'POST', host: hostOf(alpha), body: 'x=1' });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
    });

    it('refuses DELETE to a site file with 405 and keeps the file', async () => {
      const res = await hp.request('/secret.html', { method: 'DELETE', host: hostOf(alpha) });
      expect(res.status).toBe(405);
      expect((await get(alpha, '/secret.html')).status).toBe(200);
    });
  });

  describe('blob cache', () => {
    it('counts a blob cache hit when the same file is requested twice', async () => {
      await upload(hp, alpha, 'cache/once.txt', `unique ${randomBytes(8).toString('hex')}`);
      const before = await scrapeMetrics(hp);
      await get(alpha, '/cache/once.txt');
      const middle = await scrapeMetrics(hp);
      await get(alpha, '/cache/once.txt');
      const after = await scrapeMetrics(hp);
      const hit = { cache: 'blob', result: 'hit' };
      const miss = { cache: 'blob', result: 'miss' };
      const name = 'hostplane_edge_cache_events_total';
      expect(metricValue(middle, name, miss) - metricValue(before, name, miss)).toBe(1);
      expect(metricValue(after, name, hit) - metricValue(middle, name, hit)).toBe(1);
      expect(metricValue(after, name, miss)).toBe(metricValue(middle, name, miss));
    });
  });
});
