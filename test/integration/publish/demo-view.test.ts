import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempPages } from '../../../src/publish/tables.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';

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
});
