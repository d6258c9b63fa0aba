// Edge serving, routing: which site a request reaches (subdomain, custom domain, an absolute-form
// target's authority), which file a path names (index.html, /dir → /dir/ redirects, 404 pages),
// and what is refused: other methods, oversized or malformed keys, path traversal to another site.
// Responses (types, ETags, ranges, HEAD, large files) are in serving-responses.test.ts, freshness
// after writes in serving-freshness.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customDomains } from '../../../src/platform/tables.js';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { afterHeaders, hostOf, rawExchange, seedServingSites, siteGet } from './serving-support.js';

describe.each(backends)('edge serving (%s)', (backend) => {
  let hp: TestHostplane;
  let alpha: TestSite;
  let beta: TestSite;
  const get = (site: TestSite | string, path: string, headers: Record<string, string> = {}) =>
    siteGet(hp, site, path, headers);

  beforeAll(async () => {
    hp = await startHostplane(backend);
    ({ alpha, beta } = await seedServingSites(hp));
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
});
