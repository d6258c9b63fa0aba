import { describe, expect, it } from 'vitest';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { sqliteApi, type Json } from '../../support/sqlite-api.js';

// The point-in-time restore routes where nothing is replicated (embedded back-ends, no S3): what
// `make fuzz` meets. The restores themselves run against real Litestream and MinIO in
// test/e2e/sqlite-point-in-time.test.ts.

describe('point-in-time restore routes without replication', () => {
  const fixture = hostplaneWithFreshSites('pglite+fs', 'sqpitr');
  const window = (path: string) => `/api/v1/sqlite/restore-window?path=${encodeURIComponent(path)}`;

  it('documents both routes with the master key and their 4xx answers', async () => {
    const doc = (await (await fixture.hp.request('/api/v1/openapi.json')).json()) as Json;
    const get = doc.paths['/api/v1/sqlite/restore-window'].get;
    const post = doc.paths['/api/v1/sqlite/restore'].post;
    for (const op of [get, post]) {
      expect(op.security).toEqual([{ ApiKey: [] }]);
      for (const status of ['200', '400', '401', '404', '409', '503'])
        expect(op.responses[status]).toBeDefined();
    }
    expect(JSON.stringify(post.responses['400'])).toContain('SQLITE_RESTORE_WINDOW_error');
    expect(JSON.stringify(post.responses['400'])).toContain('SQLITE_BOOKMARK_INVALID_error');
    expect(JSON.stringify(get.responses['409'])).toContain('SQLITE_REPLICATION_OFF_error');
  });

  it('answers 409 for a database that is not replicated, 404 for no database, 400 for bad input', async () => {
    const api = sqliteApi(fixture.hp, (await fixture.freshSite()).site);
    const token = await api.token({ path: 'data/app.sqlite', name: 'app', requireUserAuth: false });
    expect(
      (await api.scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE t (x)' })).status,
    ).toBe(200);
    const off = await api.call('GET', window('data/app.sqlite'), { headers: api.master });
    expect(off.status).toBe(409);
    expect(off.body.message).toMatch(/not replicated/);
    const restore = (json: unknown) =>
      api.call('POST', '/api/v1/sqlite/restore', { json, headers: api.master });
    expect((await restore({ path: 'data/app.sqlite', timestamp: new Date().toISOString() })).status).toBe(
      409,
    );
    expect((await restore({ path: 'data/app.sqlite', bookmark: 'x.y' })).status).toBe(409);
    expect((await api.call('GET', window('data/other.sqlite'), { headers: api.master })).status).toBe(404);
    expect((await restore({ path: 'data/other.db', timestamp: new Date().toISOString() })).status).toBe(404);
    for (const bad of [
      {},
      { path: 'data/app.sqlite' },
      { path: 'data/app.sqlite', timestamp: 'now' },
      { path: 'data/app.sqlite', timestamp: new Date().toISOString(), extra: 1 },
      { path: '../app.sqlite', timestamp: new Date().toISOString() },
      { path: 'data/app.sqlite', bookmark: '' },
    ]) {
      const res = await restore(bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.message).toEqual(expect.any(String));
    }
    expect((await api.call('GET', '/api/v1/sqlite/restore-window', { headers: api.master })).status).toBe(
      400,
    );
    // A scoped token is not the master key.
    const scoped = { 'x-sqlite-token': token, origin: api.origin };
    expect((await api.call('GET', window('data/app.sqlite'), { headers: scoped })).status).toBe(401);
  });
});
