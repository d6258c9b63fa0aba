import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

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
});
