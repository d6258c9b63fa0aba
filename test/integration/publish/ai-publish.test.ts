import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempPages } from '../../../src/publish/tables.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';

const MB = 1024 * 1024;
const PAGE_URL = /^http:\/\/localhost:8080\/demo\/view\/([A-Za-z0-9_-]+)$/;

/** A fresh client address for each use, so per-IP rate limits never couple tests. */
let clients = 0;
const newClient = () => `203.0.113.${++clients}`;

const page = (body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body>${body}</body></html>`;

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
});
