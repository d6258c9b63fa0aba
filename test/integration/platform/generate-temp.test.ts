import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../../src/platform/secrets.js';
import { accountSessions, apiKeys } from '../../../src/platform/tables.js';
import { apiKeyHeader, backends, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import {
  bearer,
  expectError,
  expectUnauthorized,
  filePaths,
  past,
  startTwoSites,
} from '../../support/keys.js';

describe.each(backends)('authentication and API keys (%s)', (backend) => {
  let hp: TestHostplane;
  let siteA: TestSite;
  let siteB: TestSite;

  const asKey = (key: string, pathAndQuery: string, init: { method?: string; json?: unknown } = {}) =>
    hp.request(pathAndQuery, { ...init, headers: { 'x-api-key': key } });
  const generateTemp = (headers: Record<string, string>, json?: unknown) =>
    hp.request('/api/keys/generate-temp', { method: 'POST', headers, json });
  const session = async (site: TestSite) => (await hp.services.platform.createSession(site.email)).token;
  const mintTempKey = async (site: TestSite, json: unknown = {}) => {
    const res = await generateTemp(bearer(await session(site)), json);
    expect(res.status).toBe(200);
    return ((await res.json()) as { temp_api_key: string }).temp_api_key;
  };
  const readFile = async (site: TestSite, path: string) => {
    const res = await hp.request(`/api/v1/files/get?path=${encodeURIComponent(path)}`, {
      headers: apiKeyHeader(site),
    });
    return res.status === 200 ? ((await res.json()) as { content: string }).content : undefined;
  };

  beforeAll(async () => {
    ({ hp, siteA, siteB } = await startTwoSites(backend));
  });
  afterAll(() => hp?.stop());

  describe('POST /api/keys/generate-temp', () => {
    it('answers 200 with exactly success, temp_api_key, expires_in, expires_at, message', async () => {
      const res = await generateTemp(bearer(await session(siteA)), {});
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(Object.keys(body).sort()).toEqual([
        'expires_at',
        'expires_in',
        'message',
        'success',
        'temp_api_key',
      ]);
      expect(body.success).toBe(true);
      expect(typeof body.temp_api_key).toBe('string');
      expect(typeof body.message).toBe('string');
      expect(new Date(body.expires_at).toISOString()).toBe(body.expires_at);
    });

    it('defaults expires_in to 3600 seconds', async () => {
      const before = Date.now();
      const res = await generateTemp(bearer(await session(siteA)), {});
      const body = await res.json();
      expect(body.expires_in).toBe(3600);
      const lifetime = new Date(body.expires_at).getTime() - before;
      expect(lifetime).toBeGreaterThan(3600_000 - 5_000);
      expect(lifetime).toBeLessThanOrEqual(3600_000 + 5_000);
    });

    it('mints a key with the defaults when the request has no body', async () => {
      const res = await hp.request('/api/keys/generate-temp', {
        method: 'POST',
        headers: bearer(await session(siteA)),
      });
      expect(res.status).toBe(200);
      expect((await res.json()).expires_in).toBe(3600);
    });

    it('accepts the maximum expires_in of 86400', async () => {
      const res = await generateTemp(bearer(await session(siteA)), { expires_in: 86400 });
      expect(res.status).toBe(200);
      expect((await res.json()).expires_in).toBe(86400);
    });

    it.each([
      ['above the maximum (86401)', 86401],
      ['not an integer (1.5)', 1.5],
      ['a numeric string', '3600'],
      ['zero', 0],
      ['negative', -60],
      ['null', null],
    ])('refuses expires_in %s with 400 {error, message}', async (_what, expiresIn) => {
      const res = await generateTemp(bearer(await session(siteA)), { expires_in: expiresIn });
      await expectError(res, 400);
    });

    it('refuses malformed JSON with 400 {error, message}', async () => {
      const res = await hp.request('/api/keys/generate-temp', {
        method: 'POST',
        headers: { ...bearer(await session(siteA)), 'content-type': 'application/json' },
        body: '{"expires_in": ',
      });
      await expectError(res, 400);
    });

    it('mints a key that works on the files endpoints of its site', async () => {
      const key = await mintTempKey(siteA);
      const up = await asKey(key, '/api/v1/files/upload', {
        method: 'POST',
        json: { path: 'temp/made-with-temp-key.html', content: 'temp key upload' },
      });
      expect(up.status).toBe(200);
      const list = await asKey(key, '/api/v1/files/list');
      expect(filePaths(await list.json())).toContain('temp/made-with-temp-key.html');
      expect(await readFile(siteA, 'temp/made-with-temp-key.html')).toBe('temp key upload');
    });

    it('mints a key for the site named by storage_folder_id', async () => {
      const second = await hp.createSite('site-a-second', { email: siteA.email });
      const key = await mintTempKey(siteA, { storage_folder_id: second.siteId });
      const res = await asKey(key, '/api/v1/hosting-info');
      expect(res.status).toBe(200);
      expect((await res.json()).subdomain).toBe('site-a-second');
    });

    it('mints a key scoped to one site: site_id of another site of the same account gives 403', async () => {
      const second = await hp.createSite('site-a-third', { email: siteA.email });
      const key = await mintTempKey(siteA, { storage_folder_id: second.siteId });
      await expectError(await asKey(key, `/api/v1/files/list?site_id=${siteA.siteId}`), 403);
    });

    it('mints a key that answers 401 once it has expired', async () => {
      const key = await mintTempKey(siteA);
      expect((await asKey(key, '/api/v1/files/list')).status).toBe(200);
      await hp.services.store.db
        .update(apiKeys)
        .set({ expiresAt: past() })
        .where(eq(apiKeys.keyHash, hashSecret(key)));
      await expectUnauthorized(await asKey(key, '/api/v1/files/list'));
    });

    it('answers 401 with hint_for_ai without a session', async () => {
      await expectUnauthorized(await generateTemp({}, {}));
    });

    it('answers 401 for an unknown session token', async () => {
      await expectUnauthorized(await generateTemp(bearer(`hp_sess_${'y'.repeat(43)}`), {}));
    });

    it('answers 401 for an expired session', async () => {
      const site = await hp.createSite('expired-session');
      const token = await session(site);
      await hp.services.store.db
        .update(accountSessions)
        .set({ expiresAt: past() })
        .where(eq(accountSessions.tokenHash, hashSecret(token)));
      await expectUnauthorized(await generateTemp(bearer(token), {}));
    });

    it('answers 401 for an API key sent as X-API-Key instead of a session', async () => {
      await expectUnauthorized(await generateTemp(apiKeyHeader(siteA), {}));
    });

    it('answers 401 for an API key sent as the bearer token', async () => {
      await expectUnauthorized(await generateTemp(bearer(siteA.apiKey), {}));
    });

    it('answers 401, not 400, without a session even when the body is malformed', async () => {
      const res = await hp.request('/api/keys/generate-temp', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"expires_in": ',
      });
      await expectUnauthorized(res);
    });

    it('answers 404 for the storage_folder_id of a site in another account', async () => {
      const res = await generateTemp(bearer(await session(siteA)), { storage_folder_id: siteB.siteId });
      await expectError(res, 404);
    });

    it('answers 404 for a storage_folder_id that names no site', async () => {
      const res = await generateTemp(bearer(await session(siteA)), { storage_folder_id: 999_999 });
      await expectError(res, 404);
    });
  });
});
