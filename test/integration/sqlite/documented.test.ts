import { describe, expect, it } from 'vitest';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';
import { sqliteApi, type Json } from '../../support/sqlite-api.js';

// The SQLite API as its OpenAPI document describes it: the credentials each operation declares,
// lengths counted the way the document counts them, answers shaped as documented (`make fuzz`
// checks all of this at random; these are its findings, pinned).

type Schema = { properties?: Record<string, Schema>; items?: Schema; required?: string[] };

describe.each(backends)('SQLite API against its document on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `sqdoc-${backend.replace(/\W/g, '')}`);
  const fresh = async (plan: 'free' | 'standard' = 'free') =>
    sqliteApi(fixture.hp, (await fixture.freshSite(plan)).site);
  const openapi = async () => (await (await fixture.hp.request('/api/v1/openapi.json')).json()) as Json;

  it('declares the scoped token, the user session and the master key where each is needed', async () => {
    const doc = await openapi();
    const schemes = doc.components.securitySchemes;
    expect(schemes.SqliteToken).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Sqlite-Token' });
    expect(schemes.SqliteUserToken).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'X-Sqlite-User-Token',
    });
    const security = (method: string, path: string) => doc.paths[path][method].security;
    const tokenMaybeUser = [{ SqliteToken: [] }, { SqliteToken: [], SqliteUserToken: [] }];
    for (const [method, op] of [
      ['post', 'query'],
      ['post', 'exec'],
      ['post', 'batch'],
      ['get', 'version'],
      ['get', 'schema'],
      ['post', 'vacuum'],
      ['post', 'auth/logout'],
    ] as const) {
      expect(security(method, `/api/v1/sqlite/${op}`), op).toEqual(tokenMaybeUser);
    }
    expect(security('post', '/api/v1/sqlite/auth/login')).toEqual([{ SqliteToken: [] }]);
    for (const [method, path] of [
      ['get', '/api/v1/sqlite/auth/me'],
      ['post', '/api/v1/sqlite/auth/change-password'],
    ] as const) {
      expect(security(method, path), path).toEqual([{ SqliteToken: [], SqliteUserToken: [] }]);
    }
    // Register, and the pool's administration (extension: the owner's master key too).
    for (const [method, path] of [
      ['post', '/api/v1/sqlite/auth/register'],
      ['get', '/api/v1/sqlite/auth/users'],
      ['patch', '/api/v1/sqlite/auth/users/{id}'],
      ['delete', '/api/v1/sqlite/auth/users/{id}'],
      ['post', '/api/v1/sqlite/auth/users/{id}/reset-password'],
    ] as const) {
      expect(security(method, path), path).toEqual([
        { SqliteToken: [], ApiKey: [] },
        { SqliteToken: [], SqliteUserToken: [] },
      ]);
    }
    expect(security('get', '/api/v1/sqlite/databases')).toEqual([{ ApiKey: [] }]);
    expect(security('post', '/api/v1/sqlite/auth/install')).toEqual([{ ApiKey: [] }]);
    // Their 401 is the SQLite one, never the platform's "Missing API key".
    const query401 = JSON.stringify(doc.paths['/api/v1/sqlite/query'].post.responses['401']);
    expect(query401).toContain('SQLITE_TOKEN_INVALID_error');
    expect(query401).not.toContain('"#/components/schemas/UNAUTHORIZED_error"');
    // The minted token and session lead on to the calls they authorize.
    const installLinks = doc.paths['/api/v1/sqlite/auth/install'].post.responses['200'].links;
    expect(installLinks.QueryWithTheToken).toMatchObject({
      operationId: 'postApiV1SqliteQuery',
      parameters: { 'header.X-Sqlite-Token': '$response.body#/token' },
    });
    const loginLinks = doc.paths['/api/v1/sqlite/auth/login'].post.responses['200'].links;
    expect(loginLinks.MeWithTheSession.parameters).toMatchObject({
      'header.X-Sqlite-User-Token': '$response.body#/userToken',
    });
  });

  it('counts password, name and display name lengths in characters, as the document does', async () => {
    const EIGHT_EMOJI = '🔑🙂🌍🎈🍀🐙🚲🎻';
    const api = await fresh();
    const token = await api.token({
      path: 'data/app.sqlite',
      name: '🙂'.repeat(120),
      requireUserAuth: false,
    });
    expect((await api.install({ path: 'data/app.sqlite', name: '🙂'.repeat(121) })).status).toBe(400);
    // Five emoji are ten UTF-16 units but five characters: too short.
    const short = await api.register(token, 'a@example.com', '🔑'.repeat(5));
    expect(short.status).toBe(400);
    expect(short.body.error).toBe('PASSWORD_TOO_SHORT');
    const admin = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/auth/register',
      {
        email: 'a@example.com',
        // Eight characters (sixteen UTF-16 units), all different: one repeated would be refused.
        password: EIGHT_EMOJI,
        displayName: '🙂'.repeat(120),
      },
      api.master,
    );
    expect(admin.status, JSON.stringify(admin.body)).toBe(201);
    expect(admin.body.user.displayName).toBe('🙂'.repeat(120));
    const tooLong = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/auth/register',
      {
        email: 'b@example.com',
        password: '🔑'.repeat(257),
      },
      api.master,
    );
    expect(tooLong.status).toBe(400);
    const userToken = await api.login(token, 'a@example.com', EIGHT_EMOJI);
    expect(userToken).toMatch(/^[0-9a-f]{64}$/);
  });

  it('answers an email with a NUL as an invalid or unknown one, never a 500', async () => {
    const api = await fresh();
    const token = await api.token({ path: 'data/app.sqlite', name: 'app', requireUserAuth: false });
    const register = await api.register(token, 'a\u0000b@example.com');
    expect(register.status).toBe(400);
    expect(register.body.error).toBe('INVALID_EMAIL');
    expect((await api.register(token, 'a@example.com')).status).toBe(201);
    const login = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/login', {
      email: 'a@example.com\u0000',
      password: 'correct horse battery',
    });
    expect(login.status).toBe(401);
    expect(login.body.error).toBe('INVALID_CREDENTIALS');
  });

  it('answers /schema with exactly the documented fields', async () => {
    const api = await fresh();
    const token = await api.token({ path: 'data/app.sqlite', name: 'app', requireUserAuth: false });
    const batch = await api.scoped(token, 'POST', '/api/v1/sqlite/batch', {
      statements: [
        { sql: 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT "x")' },
        { sql: 'CREATE INDEX t_name ON t(name)' },
        { sql: 'CREATE VIEW v AS SELECT name FROM t' },
        { sql: 'CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END' },
      ],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    const res = await api.scoped(token, 'GET', '/api/v1/sqlite/schema');
    expect(res.status).toBe(200);
    const doc = await openapi();
    const schema = doc.paths['/api/v1/sqlite/schema'].get.responses['200'].content['application/json']
      .schema as Schema;
    const keys = (s: Schema) => Object.keys(s.properties ?? {}).sort();
    expect(Object.keys(res.body).sort()).toEqual(keys(schema));
    const table = schema.properties!.tables!.items!;
    expect(Object.keys(res.body.tables[0]).sort()).toEqual(keys(table));
    expect(Object.keys(res.body.tables[0].columns[0]).sort()).toEqual(
      keys(table.properties!.columns!.items!),
    );
    expect(Object.keys(res.body.views[0]).sort()).toEqual(keys(schema.properties!.views!.items!));
    expect(Object.keys(res.body.triggers[0]).sort()).toEqual(keys(schema.properties!.triggers!.items!));
  });
});
