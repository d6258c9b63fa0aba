import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLISH_RATE_LIMIT } from '../../../src/publish/routes.js';
import { tempPages } from '../../../src/publish/tables.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';

/** A fresh client address for each use, so per-IP rate limits never couple tests. */
let clients = 0;
const newClient = () => `203.0.113.${++clients}`;

const page = (body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body>${body}</body></html>`;

describe.each(backends)('temporary publishing (%s)', (backend) => {
  let hp: TestHostplane;

  const post = (path: string, json: unknown, client = newClient()) =>
    hp.request(path, { method: 'POST', json, headers: { 'x-forwarded-for': client } });

  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

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
