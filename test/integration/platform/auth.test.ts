import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../../src/platform/secrets.js';
import { accountSessions, apiKeys } from '../../../src/platform/tables.js';
import {
  apiKeyHeader,
  backends,
  rawRequest,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
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

  describe('401 for missing or invalid keys', () => {
    const endpoints: Array<[string, string]> = [
      ['GET', '/api/v1/files/list'],
      ['GET', '/api/v1/files/get?path=a-only.html'],
      ['POST', '/api/v1/files/upload'],
      ['POST', '/api/v1/files/rename'],
      ['DELETE', '/api/v1/files/delete?path=a-only.html'],
      ['POST', '/api/v1/files/create-folder'],
      ['POST', '/api/v1/files/rename-folder'],
      ['DELETE', '/api/v1/files/delete-folder?path=x'],
      ['GET', '/api/v1/files/storage-limits'],
      ['GET', '/api/v1/hosting-info'],
      ['POST', '/api/v1/videos/upload'],
    ];
    it.each(endpoints)('%s %s without a key answers the spec 401 body', async (method, path) => {
      await expectUnauthorized(await hp.request(path, { method }));
    });

    it('answers an unknown key with the spec 401 body', async () => {
      await expectUnauthorized(await asKey(`hp_live_${'x'.repeat(43)}`, '/api/v1/files/list'));
    });

    it('answers a too-short key with the spec 401 body', async () => {
      await expectUnauthorized(await asKey('short', '/api/v1/files/list'));
    });

    it('answers a revoked key with the spec 401 body', async () => {
      const site = await hp.createSite('revoked');
      expect((await asKey(site.apiKey, '/api/v1/files/list')).status).toBe(200);
      await hp.services.store.db
        .update(apiKeys)
        .set({ revokedAt: new Date() })
        .where(eq(apiKeys.keyHash, hashSecret(site.apiKey)));
      await expectUnauthorized(await asKey(site.apiKey, '/api/v1/files/list'));
    });

    it('answers an expired key with the spec 401 body', async () => {
      const site = await hp.createSite('expired');
      await hp.services.store.db
        .update(apiKeys)
        .set({ expiresAt: past() })
        .where(eq(apiKeys.keyHash, hashSecret(site.apiKey)));
      await expectUnauthorized(await asKey(site.apiKey, '/api/v1/files/list'));
    });

    it('answers a session token sent as X-API-Key with the spec 401 body', async () => {
      await expectUnauthorized(await asKey(await session(siteA), '/api/v1/files/list'));
    });

    it('refuses an unauthenticated upload with 401 even when its body is malformed', async () => {
      const res = await hp.request('/api/v1/files/upload', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"path": "x.html", "content": ',
      });
      await expectUnauthorized(res);
    });

    it('writes nothing for a request with an invalid key', async () => {
      const res = await asKey('hp_live_not-a-real-key-000000', '/api/v1/files/upload', {
        method: 'POST',
        json: { path: 'intruder.html', content: 'nope' },
      });
      expect(res.status).toBe(401);
      expect(await readFile(siteA, 'intruder.html')).toBeUndefined();
      expect(await readFile(siteB, 'intruder.html')).toBeUndefined();
    });
  });

  describe('a present but empty credential is refused like a wrong one', () => {
    // rawRequest sends the header as written; fetch's Headers would trim `Bearer ` to `Bearer`.
    const raw = (pathAndQuery: string, headers: Record<string, string>, json?: unknown) =>
      rawRequest(hp.port, pathAndQuery, {
        method: json === undefined ? 'GET' : 'POST',
        headers: {
          host: 'localhost:8080',
          ...headers,
          ...(json === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: json === undefined ? undefined : JSON.stringify(json),
      });

    it('serves the session alone, so the refusals below are the empty header’s doing', async () => {
      expect((await raw('/api/v1/files/list', bearer(await session(siteA)))).status).toBe(200);
    });

    it('refuses an empty X-API-Key beside a valid session with the 401 of a wrong key', async () => {
      const token = await session(siteA);
      const empty = await raw('/api/v1/files/list', { ...bearer(token), 'x-api-key': '' });
      const wrong = await raw('/api/v1/files/list', { ...bearer(token), 'x-api-key': 'hp_live_wrong' });
      await expectUnauthorized(empty.clone());
      expect(await empty.json()).toEqual(await wrong.json());
    });

    it('writes nothing for an upload with an empty X-API-Key beside a valid session', async () => {
      const headers = { ...bearer(await session(siteA)), 'x-api-key': '' };
      const res = await raw('/api/v1/files/upload', headers, { path: 'empty-key.html', content: 'no' });
      await expectUnauthorized(res);
      expect(await readFile(siteA, 'empty-key.html')).toBeUndefined();
    });

    it('refuses an empty X-API-Key alone with the 401 of a wrong key', async () => {
      const empty = await raw('/api/v1/files/list', { 'x-api-key': '' });
      await expectUnauthorized(empty.clone());
      const wrong = await raw('/api/v1/files/list', { 'x-api-key': 'hp_live_wrong' });
      expect(await empty.json()).toEqual(await wrong.json());
    });

    it('refuses `Authorization: Bearer ` with no token like a wrong session', async () => {
      for (const header of ['Bearer ', 'Bearer']) {
        const empty = await raw('/api/keys/generate-temp', { authorization: header }, {});
        await expectUnauthorized(empty.clone());
        const wrong = await raw('/api/keys/generate-temp', bearer('hp_sess_wrong'), {});
        expect(await empty.json(), header).toEqual(await wrong.json());
      }
    });

    it('refuses `Authorization: Bearer ` with no token on the files endpoints', async () => {
      const empty = await raw('/api/v1/files/list', { authorization: 'Bearer ' });
      await expectUnauthorized(empty.clone());
      const wrong = await raw('/api/v1/files/list', bearer('hp_sess_wrong'));
      expect(await empty.json()).toEqual(await wrong.json());
    });
  });

  describe('a key reaches only its own site', () => {
    it("lists only the key's own files", async () => {
      const res = await hp.request('/api/v1/files/list', { headers: apiKeyHeader(siteA) });
      expect(res.status).toBe(200);
      expect(filePaths(await res.json())).toEqual(['a-only.html', 'shared.html']);
    });

    it('reads its own version of a path that both sites have', async () => {
      expect(await readFile(siteA, 'shared.html')).toBe('A version');
      expect(await readFile(siteB, 'shared.html')).toBe('B version');
    });

    it('answers 404 for a file that exists only on another site', async () => {
      const res = await hp.request('/api/v1/files/get?path=b-only.html', { headers: apiKeyHeader(siteA) });
      expect(res.status).toBe(404);
    });

    it('answers 403 when listing with the site_id of another site', async () => {
      const res = await hp.request(`/api/v1/files/list?site_id=${siteB.siteId}`, {
        headers: apiKeyHeader(siteA),
      });
      await expectError(res, 403);
    });

    it('answers 403 when reading with the site_id of another site', async () => {
      const res = await hp.request(`/api/v1/files/get?path=b-only.html&site_id=${siteB.siteId}`, {
        headers: apiKeyHeader(siteA),
      });
      await expectError(res, 403);
    });

    it('answers 403 and changes nothing when uploading with the site_id of another site', async () => {
      const res = await hp.request(`/api/v1/files/upload?site_id=${siteB.siteId}`, {
        method: 'POST',
        headers: apiKeyHeader(siteA),
        json: { path: 'shared.html', content: 'overwritten by A' },
      });
      await expectError(res, 403);
      expect(await readFile(siteB, 'shared.html')).toBe('B version');
      expect(await readFile(siteA, 'shared.html')).toBe('A version');
    });

    it('answers 403 and deletes nothing when deleting with the site_id of another site', async () => {
      const res = await hp.request(`/api/v1/files/delete?path=b-only.html&site_id=${siteB.siteId}`, {
        method: 'DELETE',
        headers: apiKeyHeader(siteA),
      });
      await expectError(res, 403);
      expect(await readFile(siteB, 'b-only.html')).toBe('B only');
    });

    it('accepts its own site_id', async () => {
      const res = await hp.request(`/api/v1/files/list?site_id=${siteA.siteId}`, {
        headers: apiKeyHeader(siteA),
      });
      expect(res.status).toBe(200);
    });

    it('answers 404 when a session names a site of another account', async () => {
      const res = await hp.request(`/api/v1/files/list?site_id=${siteB.siteId}`, {
        headers: bearer(await session(siteA)),
      });
      await expectError(res, 404);
    });
  });

  describe('credentials at rest', () => {
    it('never stores the text of a permanent or temporary key', async () => {
      const temp = await mintTempKey(siteA);
      const rows = await hp.services.store.db.select().from(apiKeys);
      const dump = JSON.stringify(rows);
      expect(rows.length).toBeGreaterThanOrEqual(3);
      for (const key of [siteA.apiKey, siteB.apiKey, temp]) {
        expect(dump).not.toContain(key);
        expect(dump).not.toContain(key.slice(-20));
      }
    });

    it('never stores the text of a session token', async () => {
      const token = await session(siteA);
      const dump = JSON.stringify(await hp.services.store.db.select().from(accountSessions));
      expect(dump).not.toContain(token);
      expect(dump).not.toContain(token.slice(-20));
    });
  });
});
