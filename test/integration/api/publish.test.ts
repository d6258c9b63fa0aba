import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLISH_RATE_LIMIT } from '../../../src/publish/routes.js';
import { tempPages } from '../../../src/publish/tables.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';

const MB = 1024 * 1024;
const PAGE_URL = /^http:\/\/localhost:8080\/demo\/view\/([A-Za-z0-9_-]+)$/;

/** A fresh client address for each use, so per-IP rate limits never couple tests. */
let clients = 0;
const newClient = () => `203.0.113.${++clients}`;

const page = (body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body>${body}</body></html>`;

/** The page id at the end of a published URL. */
const idOf = (url: string) => PAGE_URL.exec(url)?.[1] ?? '';

describe.each(backends)('temporary publishing (%s)', (backend) => {
  let hp: TestHostplane;

  const post = (path: string, json: unknown, client = newClient()) =>
    hp.request(path, { method: 'POST', json, headers: { 'x-forwarded-for': client } });
  const postRaw = (path: string, body: string, client = newClient()) =>
    hp.request(path, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
    });
  const view = (url: string) => hp.request(new URL(url).pathname);

  /** Publishes through /ai/publish and returns the page URL. */
  const publish = async (html: string) => {
    const res = await post('/ai/publish', { html });
    expect(res.status).toBe(200);
    return ((await res.json()) as { url: string }).url;
  };

  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  describe('POST /ai/publish', () => {
    it('answers 200 with exactly {success: true, url}', async () => {
      const res = await post('/ai/publish', { html: page('hello') });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(Object.keys(body).sort()).toEqual(['success', 'url']);
      expect(body.success).toBe(true);
    });

    it('returns a url of the form {base_url}/demo/view/<id>', async () => {
      const url = await publish(page('where am I'));
      expect(url).toMatch(PAGE_URL);
    });

    it('serves the exact HTML at the returned url as text/html', async () => {
      const html = page('<h1>Grüße 👋</h1><script>console.log("x")</script>');
      const res = await view(await publish(html));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await res.text()).toBe(html);
    });

    it('gives every publication its own url', async () => {
      const a = await publish(page('same'));
      const b = await publish(page('same'));
      expect(a).not.toBe(b);
    });

    it('refuses a body without html with 400 {success: false, error}', async () => {
      const res = await post('/ai/publish', { title: 'no html' });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(Object.keys(body).sort()).toEqual(['error', 'success']);
      expect(body.success).toBe(false);
      expect(typeof body.error).toBe('string');
    });

    it.each([
      ['an empty string', ''],
      ['only whitespace', ' \n\t '],
      ['a number', 42],
      ['null', null],
      ['an array', ['<p>x</p>']],
      ['an object', { html: '<p>x</p>' }],
      ['a boolean', true],
    ])('refuses html that is %s with 400 {success: false, error}', async (_what, html) => {
      const res = await post('/ai/publish', { html });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(Object.keys(body).sort()).toEqual(['error', 'success']);
      expect(body.success).toBe(false);
    });

    it('accepts html of exactly 1 MB (1048576 bytes) and serves it whole', async () => {
      const prefix = page('');
      const html = prefix + 'x'.repeat(MB - Buffer.byteLength(prefix));
      expect(Buffer.byteLength(html)).toBe(MB);
      const res = await view(await publish(html));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(html);
    });

    it('refuses html of 1048577 bytes with 400 {success: false, error}', async () => {
      const res = await post('/ai/publish', { html: 'x'.repeat(MB + 1) });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(Object.keys(body).sort()).toEqual(['error', 'success']);
      expect(body.error).toMatch(/1 MB/);
    });

    it('measures the 1 MB limit in UTF-8 bytes, not characters', async () => {
      const html = 'é'.repeat(MB / 2) + 'a'; // 524289 characters, 1048577 bytes
      const res = await post('/ai/publish', { html });
      expect(res.status).toBe(400);
    });

    it('refuses a body far over the limit with 400 in the same shape', async () => {
      const res = await post('/ai/publish', { html: 'x'.repeat(5 * MB) });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ success: false, error: expect.any(String) });
    });

    it('reads the body as JSON even when curl -d labels it form-encoded', async () => {
      const res = await hp.request('/ai/publish', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': newClient() },
        body: JSON.stringify({ html: page('curl -d') }),
      });
      expect(res.status).toBe(200);
      expect((await res.json()).success).toBe(true);
    });

    it('refuses malformed JSON with 400 {success: false, error}', async () => {
      const res = await postRaw('/ai/publish', '{"html": "<p>unterminated');
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ success: false, error: expect.any(String) });
    });

    it('refuses a JSON body that is not an object with 400 {success: false, error}', async () => {
      for (const raw of ['[]', '["<p>x</p>"]', '"<p>x</p>"', 'null']) {
        const res = await postRaw('/ai/publish', raw);
        expect(res.status, raw).toBe(400);
        expect(await res.json(), raw).toEqual({ success: false, error: expect.any(String) });
      }
    });

    it('stores nothing when it refuses a request', async () => {
      const [before] = await hp.services.store.db.select({ n: sql<number>`count(*)::int` }).from(tempPages);
      await post('/ai/publish', { html: '' });
      await post('/ai/publish', { html: 'x'.repeat(MB + 1) });
      await postRaw('/ai/publish', '{nope');
      const [after] = await hp.services.store.db.select({ n: sql<number>`count(*)::int` }).from(tempPages);
      expect(after?.n).toBe(before?.n);
    });
  });

  describe('POST /demo/api/publish', () => {
    it('answers 200 with exactly {success, url, filename, message, expires_in}', async () => {
      const res = await post('/demo/api/publish', { html_content: page('demo') });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(Object.keys(body).sort()).toEqual(['expires_in', 'filename', 'message', 'success', 'url']);
      expect(body.success).toBe(true);
      expect(body.url).toMatch(PAGE_URL);
      expect(typeof body.filename).toBe('string');
      expect(typeof body.message).toBe('string');
      expect(typeof body.expires_in).toBe('string');
    });

    it('serves html_content at the returned url', async () => {
      const html = page('<p>demo page</p>');
      const res = await post('/demo/api/publish', { html_content: html, title: 'My page' });
      const { url } = (await res.json()) as { url: string };
      const served = await view(url);
      expect(served.status).toBe(200);
      expect(await served.text()).toBe(html);
    });

    it('refuses a body without html_content with 400 {success: false, message, error}', async () => {
      const res = await post('/demo/api/publish', { title: 'only a title' });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(Object.keys(body).sort()).toEqual(['error', 'message', 'success']);
      expect(body.success).toBe(false);
      expect(typeof body.message).toBe('string');
      expect(typeof body.error).toBe('string');
    });

    it('refuses empty html_content with 400', async () => {
      const res = await post('/demo/api/publish', { html_content: '' });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        success: false,
        message: expect.any(String),
        error: expect.any(String),
      });
    });

    it('refuses html_content over 1 MB with 400', async () => {
      const res = await post('/demo/api/publish', { html_content: 'x'.repeat(MB + 1) });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        success: false,
        message: expect.any(String),
        error: expect.any(String),
      });
    });

    it('refuses a title that is not a string with 400', async () => {
      const res = await post('/demo/api/publish', { html_content: page('x'), title: 42 });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        success: false,
        message: expect.any(String),
        error: expect.any(String),
      });
    });

    it('refuses malformed JSON with 400 {success: false, message, error}', async () => {
      const res = await postRaw('/demo/api/publish', '{"html_content":');
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        success: false,
        message: expect.any(String),
        error: expect.any(String),
      });
    });

    it('refuses a JSON array body with 400 {success: false, message, error}', async () => {
      const res = await postRaw('/demo/api/publish', '[]');
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        success: false,
        message: expect.any(String),
        error: expect.any(String),
      });
    });
  });

  describe('GET /demo/view/<id>', () => {
    it('answers 404 for an id that was never published', async () => {
      const res = await hp.request('/demo/view/neverPublished123');
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    });

    it('answers 404 for an id with characters no page id has', async () => {
      expect((await hp.request('/demo/view/..%2F..%2Fetc')).status).toBe(404);
      expect((await hp.request(`/demo/view/${'a'.repeat(300)}`)).status).toBe(404);
    });

    it('sandboxes the page so its scripts do not run on the API origin', async () => {
      const res = await view(await publish(page('<script>fetch("/api/v1/files/list")</script>')));
      expect(res.headers.get('content-security-policy')).toMatch(/(^|;\s*)sandbox\b/);
      expect(res.headers.get('content-security-policy')).not.toMatch(/allow-same-origin/);
    });

    it('is not cached by browsers or proxies', async () => {
      const res = await view(await publish(page('fresh')));
      expect(res.headers.get('cache-control')).toBe('no-store');
    });
  });

  describe('expiry', () => {
    const expire = (id: string) =>
      hp.services.store.db
        .update(tempPages)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(eq(tempPages.id, id));
    const rowOf = async (id: string) =>
      (await hp.services.store.db.select().from(tempPages).where(eq(tempPages.id, id)))[0];

    it('keeps a page for 60 minutes from publication', async () => {
      const before = Date.now();
      const id = idOf(await publish(page('an hour')));
      const row = await rowOf(id);
      expect(row).toBeDefined();
      const lifetime = row!.expiresAt.getTime() - before;
      expect(lifetime).toBeGreaterThan(60 * 60_000 - 5_000);
      expect(lifetime).toBeLessThanOrEqual(60 * 60_000 + 5_000);
    });

    it('refuses an expired page at once, before any sweep', async () => {
      const url = await publish(page('soon gone'));
      expect((await view(url)).status).toBe(200);
      await expire(idOf(url));
      const res = await view(url);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain('soon gone');
      expect(await rowOf(idOf(url))).toBeDefined();
    });

    it('sweepExpired deletes expired pages and keeps live ones', async () => {
      const expired = idOf(await publish(page('expired')));
      const live = idOf(await publish(page('live')));
      await expire(expired);
      const removed = await hp.services.publish.sweepExpired();
      expect(removed).toBeGreaterThanOrEqual(1);
      expect(await rowOf(expired)).toBeUndefined();
      expect(await rowOf(live)).toBeDefined();
    });
  });

  describe('rate limit per client IP', () => {
    const limit = PUBLISH_RATE_LIMIT.perMinute;

    it(`refuses the ${limit + 1}th publish within a minute from one IP with 429 {success: false, error}`, async () => {
      const client = newClient();
      for (let i = 0; i < limit; i++) {
        const res = await post('/ai/publish', { html: page(`n${i}`) }, client);
        expect(res.status, `publish ${i + 1}`).toBe(200);
      }
      const res = await post('/ai/publish', { html: page('one too many') }, client);
      expect(res.status).toBe(429);
      expect(await res.json()).toEqual({ success: false, error: expect.any(String) });
    });

    it('still accepts another IP while one IP is limited', async () => {
      const busy = newClient();
      for (let i = 0; i <= limit; i++) await post('/ai/publish', { html: page(`n${i}`) }, busy);
      expect((await post('/ai/publish', { html: page('blocked') }, busy)).status).toBe(429);
      const res = await post('/ai/publish', { html: page('other client') }, newClient());
      expect(res.status).toBe(200);
    });

    it('refuses /demo/api/publish over the limit with 429 {success: false, message, error}', async () => {
      const client = newClient();
      for (let i = 0; i < limit; i++)
        await post('/demo/api/publish', { html_content: page(`n${i}`) }, client);
      const res = await post('/demo/api/publish', { html_content: page('one too many') }, client);
      expect(res.status).toBe(429);
      expect(await res.json()).toEqual({
        success: false,
        message: expect.any(String),
        error: expect.any(String),
      });
    });

    it('counts both publish endpoints against one budget per IP', async () => {
      const client = newClient();
      for (let i = 0; i < limit; i++) {
        const res =
          i % 2 === 0
            ? await post('/ai/publish', { html: page(`n${i}`) }, client)
            : await post('/demo/api/publish', { html_content: page(`n${i}`) }, client);
        expect(res.status, `publish ${i + 1}`).toBe(200);
      }
      expect((await post('/ai/publish', { html: page('over') }, client)).status).toBe(429);
      expect((await post('/demo/api/publish', { html_content: page('over') }, client)).status).toBe(429);
    });

    it('does not publish the refused page', async () => {
      const client = newClient();
      for (let i = 0; i < limit; i++) await post('/ai/publish', { html: page(`n${i}`) }, client);
      const marker = `refused-${Math.random()}`;
      await post('/ai/publish', { html: page(marker) }, client);
      const rows = await hp.services.store.db
        .select({ id: tempPages.id })
        .from(tempPages)
        .where(sql`${tempPages.html} like ${`%${marker}%`}`);
      expect(rows).toEqual([]);
    });
  });
});
