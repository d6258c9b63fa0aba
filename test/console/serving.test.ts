import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostplane, type TestHostplane } from '../support/hostplane.js';

describe('the console is served by the API host', () => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    await hp.createSite('has-a-console-path');
  });
  afterAll(async () => hp?.stop());

  it('answers the app for /console and every path below it, never cached, under a strict CSP', async () => {
    for (const path of ['/console', '/console/', '/console/sites/4/files', '/console/reset']) {
      const res = await hp.request(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      const html = await res.text();
      expect(html).toMatch(/<script type="module" src="\/console\/assets\/main-[A-Z0-9]+\.js">/);
      expect(html).not.toMatch(/https?:\/\//); // nothing from another origin
    }
  });

  it('serves the hashed assets for a year and answers the API 404 for a missing one', async () => {
    const html = await (await hp.request('/console')).text();
    const js = html.match(/src="(\/console\/assets\/[^"]+)"/)![1]!;
    const css = html.match(/href="(\/console\/assets\/[^"]+)"/)![1]!;
    for (const asset of [js, css]) {
      const res = await hp.request(asset);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
    expect((await hp.request(js)).headers.get('content-type')).toMatch(/javascript/);
    const missing = await hp.request('/console/assets/main-NOPE.js');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: 'Not found' });
  });

  it('serves the brotli or gzip variant built beside each asset as the browser accepts it, identity otherwise', async () => {
    const html = await (await hp.request('/console')).text();
    const js = html.match(/src="(\/console\/assets\/[^"]+)"/)![1]!;
    const css = html.match(/href="(\/console\/assets\/[^"]+)"/)![1]!;
    for (const asset of [js, css]) {
      const plain = await hp.request(asset, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.status).toBe(200);
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(plain.headers.get('vary')).toMatch(/accept-encoding/i);
      const original = Buffer.from(await plain.arrayBuffer());
      expect(Number(plain.headers.get('content-length'))).toBe(original.length);
      const etags = new Set([plain.headers.get('etag')]);

      const cases = [
        { accept: 'gzip, deflate, br, zstd', encoding: 'br', decode: brotliDecompressSync },
        { accept: 'gzip, deflate', encoding: 'gzip', decode: gunzipSync },
        { accept: 'br;q=0, gzip;q=0.5', encoding: 'gzip', decode: gunzipSync },
      ];
      for (const { accept, encoding, decode } of cases) {
        const res = await hp.request(asset, { headers: { 'accept-encoding': accept } });
        expect(res.status, `${asset} with ${accept}`).toBe(200);
        expect(res.headers.get('content-encoding')).toBe(encoding);
        expect(res.headers.get('vary')).toMatch(/accept-encoding/i);
        expect(res.headers.get('content-type')).toBe(plain.headers.get('content-type'));
        expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
        const bytes = Buffer.from(await res.arrayBuffer());
        expect(Number(res.headers.get('content-length'))).toBe(bytes.length);
        expect(bytes.length).toBeLessThan(original.length / 2);
        expect(decode(bytes).equals(original)).toBe(true);
        etags.add(res.headers.get('etag'));
        // A revalidation of the variant answers 304 for its own ETag.
        const again = await hp.request(asset, {
          headers: { 'accept-encoding': accept, 'if-none-match': res.headers.get('etag')! },
        });
        expect(again.status).toBe(304);
      }
      // Each representation has its own validator.
      expect(etags.size).toBe(3);
      expect([...etags].every((tag) => tag && /^(W\/)?"/.test(tag))).toBe(true);
      // No Accept-Encoding at all: the bytes as built.
      const bare = await hp.request(asset);
      expect(bare.headers.get('content-encoding')).toBeNull();
      expect(Buffer.from(await bare.arrayBuffer()).equals(original)).toBe(true);
    }
    // The variants are not assets of their own.
    expect((await hp.request(`${js}.br`)).status).toBe(404);
  });

  it('is not served on a site host: a site may have its own /console', async () => {
    const res = await hp.request('/console', { host: 'has-a-console-path.localhost:8080' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-security-policy') ?? '').not.toContain("script-src 'self'");
  });
});
