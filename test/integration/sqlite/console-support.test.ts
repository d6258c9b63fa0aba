import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { createDatabase } from '../../support/postgres.js';
import { sqliteApi, type Json } from '../../support/sqlite-api.js';

// What the owner's console needs of the SQLite API beyond the spec: the site's databases, scoped
// calls from the API's own origin (first-party pages), end users managed with the master key.

const API_ORIGIN = 'http://localhost:8080'; // the test servers' HOSTPLANE_BASE_URL

describe.each(backends)('SQLite for the console on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `sqcon-${backend.replace(/\W/g, '')}`);
  const fresh = async (plan: 'free' | 'standard' = 'free') =>
    sqliteApi(fixture.hp, (await fixture.freshSite(plan)).site);

  it('lists the site’s databases with size, version and users against the caps in effect', async () => {
    const api = await fresh();
    const empty = await api.call('GET', '/api/v1/sqlite/databases', { headers: api.master });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ success: true, databases: [], maxDatabases: 1 });
    const token = await api.token({ path: 'data/app.sqlite', name: 'app', requireUserAuth: false });
    const revoked = await api.install({ path: 'data/app.sqlite', name: 'old' });
    await api.call('DELETE', `/api/v1/sqlite/auth/tokens/${revoked.body.tokenId}`, { headers: api.master });
    const made = await api.scoped(token, 'POST', '/api/v1/sqlite/exec', {
      sql: 'CREATE TABLE t (x TEXT)',
    });
    expect(made.status).toBe(200);
    await api.register(token, 'owner@example.com');
    const live = await api.scoped(token, 'GET', '/api/v1/sqlite/version');
    const res = await api.call('GET', '/api/v1/sqlite/databases', { headers: api.master });
    expect(res.status).toBe(200);
    expect(res.body.databases).toEqual([
      {
        path: 'data/app.sqlite',
        sizeBytes: live.body.sizeBytes, // live: this server owns the database
        maxSizeBytes: 5 * 1024 * 1024,
        version: live.body.version,
        users: 1,
        maxUsers: 3,
        activeTokens: 1,
        createdAt: expect.any(String),
      },
    ]);
    expect(live.body.sizeBytes).toBeGreaterThan(0);
    // Another site's key sees its own (none); no key is a 401.
    const other = await fresh();
    expect(
      (await other.call('GET', '/api/v1/sqlite/databases', { headers: other.master })).body.databases,
    ).toEqual([]);
    expect((await api.call('GET', '/api/v1/sqlite/databases')).status).toBe(401);
  });

  it('accepts scoped calls from the API’s own origin, and same-origin GETs that carry no Origin', async () => {
    const api = await fresh();
    const token = await api.token({ path: 'first.sqlite', name: 'console', requireUserAuth: false });
    const fromApi = await api.call('POST', '/api/v1/sqlite/query', {
      json: { sql: 'SELECT 1 AS one' },
      headers: { 'x-sqlite-token': token, origin: API_ORIGIN },
    });
    expect(fromApi.status).toBe(200);
    expect(fromApi.body.rows).toEqual([{ one: 1 }]);
    // A browser's same-origin GET has no Origin, but Sec-Fetch-Site says where it comes from.
    const sameOrigin = await api.call('GET', '/api/v1/sqlite/schema', {
      headers: { 'x-sqlite-token': token, 'sec-fetch-site': 'same-origin' },
    });
    expect(sameOrigin.status).toBe(200);
    expect(sameOrigin.headers.get('access-control-allow-origin')).toBeNull();
    for (const headers of [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      {},
      { 'sec-fetch-site': 'same-origin', origin: 'https://evil.example' },
      { origin: `${API_ORIGIN}/` },
    ]) {
      const res = await api.call('GET', '/api/v1/sqlite/schema', {
        headers: { 'x-sqlite-token': token, ...headers },
      });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.body.message).toBe('Request Origin is not permitted for this token.');
    }
    // The token's record still lists the site's own origins (spec 2.10).
    const list = await api.call('GET', '/api/v1/sqlite/auth/tokens', { headers: api.master });
    expect(list.body.tokens[0].allowedOrigins).toEqual([api.origin]);
  });

  it('lets the master key manage end users: list, role, disable, reset, delete', async () => {
    const api = await fresh();
    const token = await api.token({ path: 'pool.sqlite', name: 'console', requireUserAuth: false });
    const admin = (await api.register(token, 'admin@example.com')).body.user as Json;
    const user = (await api.register(token, 'user@example.com')).body.user as Json;
    const owner = (method: string, path: string, json?: unknown, key = api.site.apiKey) =>
      api.scoped(token, method, `/api/v1/sqlite/auth/users${path}`, json, { 'x-api-key': key });

    const listed = await owner('GET', '');
    expect(listed.status).toBe(200);
    expect(listed.body.users.map((u: Json) => [u.email, u.role])).toEqual([
      ['admin@example.com', 'admin'],
      ['user@example.com', 'user'],
    ]);
    const promoted = await owner('PATCH', `/${user.id}`, { role: 'admin' });
    expect(promoted.status).toBe(200);
    expect(promoted.body.user).toMatchObject({ email: 'user@example.com', role: 'admin' });
    const session = await api.login(token, 'user@example.com');
    const disabled = await owner('PATCH', `/${user.id}`, { disabled: true });
    expect(disabled.body.user.disabled).toBe(true);
    // Its session ended, and its login is refused.
    const me = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me', undefined, {
      'x-sqlite-user-token': session,
    });
    expect(me.status).toBe(401);
    const login = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/login', {
      email: 'user@example.com',
      password: 'correct horse battery',
    });
    expect(login.status).toBe(403);
    expect(login.body.error).toBe('ACCOUNT_DISABLED');
    // The pool keeps its last active admin, whoever asks.
    const last = await owner('PATCH', `/${admin.id}`, { disabled: true });
    expect(last.status).toBe(403);
    expect(last.body.code).toBe('LAST_ADMIN');

    expect(
      (await owner('POST', `/${admin.id}/reset-password`, { newPassword: 'a brand new secret' })).status,
    ).toBe(204);
    expect(await api.login(token, 'admin@example.com', 'a brand new secret')).toMatch(/^[0-9a-f]{64}$/);
    const weak = await owner('POST', `/${admin.id}/reset-password`, { newPassword: 'password' });
    expect(weak.status).toBe(400);

    expect((await owner('DELETE', `/${user.id}`)).status).toBe(204);
    expect((await owner('GET', '')).body.users.map((u: Json) => u.email)).toEqual(['admin@example.com']);
    expect((await owner('DELETE', `/${admin.id}`)).body.code).toBe('LAST_ADMIN');

    // Another site's key does not own the database; a made-up key is no key.
    const other = await fresh();
    const foreign = await owner('GET', '', undefined, other.site.apiKey);
    expect(foreign.status).toBe(403);
    expect(foreign.body.message).toBe('This master key does not own the database.');
    const bad = await owner('DELETE', `/${admin.id}`, undefined, 'hp_not_a_key');
    expect(bad.status).toBe(401);
    // Without a key, the spec's admin session is still needed (and still works).
    const none = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/users');
    expect(none.status).toBe(401);
    const adminSession = await api.login(token, 'admin@example.com', 'a brand new secret');
    const bySession = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/users', undefined, {
      'x-sqlite-user-token': adminSession,
    });
    expect(bySession.status).toBe(200);
  });
});

describe('SQLite for the console across two replicas (PostgreSQL)', () => {
  let a: TestHostplane;
  let b: TestHostplane;
  beforeAll(async () => {
    const databaseUrl = await createDatabase(inject('postgresUrl'));
    const replica = (name: string) =>
      startHostplane('postgres+s3', {
        env: { DATABASE_URL: databaseUrl, HOSTPLANE_SQLITE_SHARD_NAME: name },
      });
    a = await replica('console-a');
    b = await replica('console-b');
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('admits the API’s origin on the replica that forwards and on the shard that owns', async () => {
    const site = await a.createSite('console-hop');
    // Installed and first used through A: A owns the database, B forwards.
    const token = await sqliteApi(a, site).token({
      path: 'hop.sqlite',
      name: 'console',
      requireUserAuth: false,
    });
    const viaA = sqliteApi(a, site);
    expect(
      (await viaA.scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE t (x)' })).status,
    ).toBe(200);
    const viaB = sqliteApi(b, site);
    const query = await viaB.call('POST', '/api/v1/sqlite/query', {
      json: { sql: 'SELECT count(*) AS n FROM t' },
      headers: { 'x-sqlite-token': token, origin: API_ORIGIN },
    });
    expect(query.status).toBe(200);
    expect(query.body.rows).toEqual([{ n: 0 }]);
    const schema = await viaB.call('GET', '/api/v1/sqlite/schema', {
      headers: { 'x-sqlite-token': token, 'sec-fetch-site': 'same-origin' },
    });
    expect(schema.status).toBe(200);
    expect(schema.body.tables.map((t: Json) => t.name)).toEqual(['t']);
    // B lists the database with the figures A reported (B does not own it).
    const listed = await viaB.call('GET', '/api/v1/sqlite/databases', { headers: viaB.master });
    expect(listed.body.databases).toMatchObject([{ path: 'hop.sqlite', maxSizeBytes: 5 * 1024 * 1024 }]);
    // End users by the master key through B (PostgreSQL only, no hop).
    await viaB.register(token, 'first@example.com');
    const users = await viaB.scoped(token, 'GET', '/api/v1/sqlite/auth/users', undefined, viaB.master);
    expect(users.body.users.map((u: Json) => u.email)).toEqual(['first@example.com']);
  });
});
