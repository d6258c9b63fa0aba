import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sqliteDatabases } from '../../../src/sqlite/tables.js';
import { CHANNELS } from '../../../src/store/index.js';
import { eventually } from '../../support/eventually.js';
import {
  metricValue,
  scrapeMetrics,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { createDatabase } from '../../support/postgres.js';
import { sqliteApi } from '../../support/sqlite-api.js';
import { heldChannel } from '../../support/held-channel.js';

/**
 * Scoped tokens are resolved from memory after their first call (TokenGrants). Two replicas on
 * one PostgreSQL, both with the grant in memory: every change that alters it applies on both —
 * at once on the replica that made it, as soon as PostgreSQL's NOTIFY lands on the other.
 */
describe('SQLite grants in memory follow every change, on every replica', () => {
  let databaseUrl: string;
  const dirs: string[] = [];
  let a: TestHostplane;
  let b: TestHostplane;
  // Each replica's session announcements, held back where a test says so.
  const sessionNews = new Map<TestHostplane, ReturnType<typeof heldChannel>>();
  const replica = async (name: string) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), `hostplane-grants-${name}-`));
    dirs.push(dir);
    const news = heldChannel(CHANNELS.sqliteSessions);
    const hp = await startHostplane('postgres+s3', {
      env: { DATABASE_URL: databaseUrl, HOSTPLANE_SQLITE_SHARD_NAME: name, HOSTPLANE_DATA_DIR: dir },
      wrapStore: news.wrap,
    });
    sessionNews.set(hp, news);
    return hp;
  };
  const query = { sql: 'SELECT 1 AS one' };

  beforeAll(async () => {
    databaseUrl = await createDatabase(inject('postgresUrl'));
    a = await replica('grants-a');
    b = await replica('grants-b');
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  /** A site with a database, its token already resolved (in memory) on both replicas. */
  async function warmed(slug: string): Promise<{ site: TestSite; token: string }> {
    const site = await a.createSite(slug, { plan: 'business' });
    const token = await sqliteApi(a, site).token({ path: 'app.sqlite', name: 'app', requireUserAuth: false });
    for (const hp of [a, b]) {
      const res = await sqliteApi(hp, site).scoped(token, 'POST', '/api/v1/sqlite/query', query);
      expect(res.status).toBe(200);
    }
    return { site, token };
  }

  it('refuses a revoked token at once where it was revoked, and on the other replica', async () => {
    const { site, token } = await warmed('grants-revoke');
    const viaA = sqliteApi(a, site);
    const viaB = sqliteApi(b, site);
    const invalid = 'Invalid, expired, or revoked SQLite token.';
    expect((await viaB.scoped(token, 'GET', '/api/v1/sqlite/auth/me')).body.message).not.toBe(invalid);
    const [record] = (await viaA.call('GET', '/api/v1/sqlite/auth/tokens', { headers: viaA.master })).body
      .tokens as Array<{ id: number }>;
    const revoked = await viaA.call('DELETE', `/api/v1/sqlite/auth/tokens/${record!.id}`, {
      headers: viaA.master,
    });
    expect(revoked.status).toBe(200);
    expect((await viaA.scoped(token, 'POST', '/api/v1/sqlite/query', query)).status).toBe(401);
    // The user routes are answered by the replica that got the call (no forwarding): B's own
    // grant decides.
    await eventually(
      'replica B refusing the revoked token',
      async () => (await viaB.scoped(token, 'GET', '/api/v1/sqlite/auth/me')).body.message === invalid,
      5_000,
    );
    expect((await viaB.scoped(token, 'POST', '/api/v1/sqlite/query', query)).status).toBe(401);
  });

  it('accepts a newly attached domain’s origin and drops a renamed slug’s, on both replicas', async () => {
    const { site, token } = await warmed('grants-routing');
    const port = new URL(sqliteApi(a, site).origin).port;
    const domainOrigin = `http://app.grants.example:${port}`;
    const renamedOrigin = `http://grants-renamed.localhost:${port}`;
    const from = (hp: TestHostplane, origin: string) =>
      sqliteApi(hp, site).scoped(token, 'POST', '/api/v1/sqlite/query', query, { origin });
    for (const hp of [a, b]) expect((await from(hp, domainOrigin)).status).toBe(403);

    // What the Site controller does when a Site resource gains a domain and a new slug.
    await a.services.platform.applyRouting(site.siteId, 'grants-renamed', ['app.grants.example']);
    for (const hp of [a, b]) {
      await eventually(
        `the new origins on ${hp === a ? 'A' : 'B'}`,
        async () =>
          (await from(hp, domainOrigin)).status === 200 && (await from(hp, renamedOrigin)).status === 200,
        5_000,
      );
      expect((await from(hp, sqliteApi(a, site).origin)).status).toBe(403);
    }
  });

  it('ends a session in memory on both replicas: logout, disable, role change', async () => {
    const site = await a.createSite('grants-sessions', { plan: 'business' });
    const viaA = sqliteApi(a, site);
    const viaB = sqliteApi(b, site);
    const token = await viaA.token({ path: 'users.sqlite', name: 'users', requireUserAuth: true });
    const register = async (email: string) => {
      const res = await viaA.register(token, email);
      expect(res.status).toBe(201);
      return (res.body.user as { id: number }).id;
    };
    await register('admin@example.com');
    const userId = await register('user@example.com');
    const admin = await viaA.login(token, 'admin@example.com');
    const user = await viaA.login(token, 'user@example.com');
    const crud = (api: typeof viaA, session: string, path = '/api/v1/sqlite/query') =>
      api.scoped(token, 'POST', path, path.endsWith('query') ? query : undefined, {
        'x-sqlite-user-token': session,
      });
    // In memory on both replicas (the first call on each reads PostgreSQL).
    for (const api of [viaA, viaB]) {
      expect((await crud(api, admin)).status).toBe(200);
      expect((await crud(api, user)).status).toBe(200);
      expect((await crud(api, user, '/api/v1/sqlite/vacuum')).status).toBe(403); // not an admin
    }

    // An admin makes the user an admin through B: vacuum is theirs on both.
    const promoted = await viaB.scoped(
      token,
      'PATCH',
      `/api/v1/sqlite/auth/users/${userId}`,
      { role: 'admin' },
      {
        'x-sqlite-user-token': admin,
      },
    );
    expect(promoted.status).toBe(200);
    expect((await crud(viaB, user, '/api/v1/sqlite/vacuum')).status).toBe(200);
    await eventually(
      'A seeing the new role',
      async () => (await crud(viaA, user, '/api/v1/sqlite/vacuum')).status === 200,
      5_000,
    );

    // The admin logs out through A: refused at once there, and on B once the NOTIFY lands.
    const out = await viaA.scoped(token, 'POST', '/api/v1/sqlite/auth/logout', undefined, {
      'x-sqlite-user-token': admin,
    });
    expect(out.status).toBe(204);
    expect((await crud(viaA, admin)).status).toBe(401);
    await eventually(
      'B refusing the ended session',
      async () => (await crud(viaB, admin)).status === 401,
      5_000,
    );

    // The admin signs in again and disables the user through B: the user's session ends on both.
    const again = await viaA.login(token, 'admin@example.com');
    const disabled = await viaB.scoped(
      token,
      'PATCH',
      `/api/v1/sqlite/auth/users/${userId}`,
      { disabled: true },
      {
        'x-sqlite-user-token': again,
      },
    );
    expect(disabled.status).toBe(200);
    expect((await crud(viaB, user)).status).toBe(401);
    await eventually(
      'A refusing the disabled user',
      async () => (await crud(viaA, user)).status === 401,
      5_000,
    );
    expect((await crud(viaA, again)).status).toBe(200);
  });

  it('checks the session of a forwarded call on the owner as it is, before the NOTIFY lands there', async () => {
    const site = await a.createSite('grants-hop', { plan: 'business' });
    const token = await sqliteApi(a, site).token({ path: 'hop.sqlite', name: 'hop', requireUserAuth: true });
    await sqliteApi(a, site).register(token, 'admin@example.com');
    const userId = (
      (await sqliteApi(a, site).register(token, 'user@example.com')).body.user as { id: number }
    ).id;
    const admin = await sqliteApi(a, site).login(token, 'admin@example.com');
    const user = await sqliteApi(a, site).login(token, 'user@example.com');
    const crud = (hp: TestHostplane, path = '/api/v1/sqlite/query') =>
      sqliteApi(hp, site).scoped(token, 'POST', path, path.endsWith('query') ? query : undefined, {
        'x-sqlite-user-token': user,
      });
    // The first call places the database; the other replica forwards every CRUD call to its owner.
    expect((await crud(a, '/api/v1/sqlite/vacuum')).status).toBe(403); // not an admin
    const [db] = await a.services.store.db
      .select()
      .from(sqliteDatabases)
      .where(eq(sqliteDatabases.siteId, site.siteId));
    const [owner, other] = db!.shard === a.config.sqliteShard.name ? [a, b] : [b, a];
    expect((await crud(owner, '/api/v1/sqlite/vacuum')).status).toBe(403); // the session in the owner's memory
    const lookups = async () => {
      const text = await scrapeMetrics(owner);
      const count = (result: string) =>
        metricValue(text, 'hostplane_sqlite_session_lookups_total', { result });
      return { hit: count('hit'), miss: count('miss') };
    };
    const changeUser = (json: Record<string, unknown>) =>
      sqliteApi(other, site).scoped(token, 'PATCH', `/api/v1/sqlite/auth/users/${userId}`, json, {
        'x-sqlite-user-token': admin,
      });

    const news = sessionNews.get(owner)!;
    news.hold();
    try {
      // Promoted through the other replica: its next forwarded call is checked against PostgreSQL.
      expect((await changeUser({ role: 'admin' })).status).toBe(200);
      let before = await lookups();
      expect((await crud(other, '/api/v1/sqlite/vacuum')).status).toBe(200);
      expect(await lookups()).toEqual({ hit: before.hit, miss: before.miss + 1 });
      // A call served by the owner itself stays a lookup in its memory (now holding the new role).
      before = await lookups();
      expect((await crud(owner, '/api/v1/sqlite/vacuum')).status).toBe(200);
      expect(await lookups()).toEqual({ hit: before.hit + 1, miss: before.miss });

      // Disabled through the other replica: refused there at once, and no longer kept by the owner.
      expect((await changeUser({ disabled: true })).status).toBe(200);
      expect((await crud(other)).status).toBe(401);
      expect((await crud(owner)).status).toBe(401);
    } finally {
      news.release();
    }
  });

  it('keeps a site’s grants through an upload to that site, on both replicas', async () => {
    const { site, token } = await warmed('grants-upload');
    const pageStatus = async (hp: TestHostplane) =>
      (await hp.request('/page.html', { host: `${site.slug}.localhost:8080` })).status;
    for (const hp of [a, b]) expect(await pageStatus(hp)).toBe(404);
    const misses = async () => {
      let total = 0;
      for (const hp of [a, b])
        total += metricValue(await scrapeMetrics(hp), 'hostplane_sqlite_grant_lookups_total', {
          result: 'miss',
        });
      return total;
    };
    const before = await misses();
    await upload(a, site, 'page.html', 'uploaded');
    // An edge no longer answering 404 has heard the upload's event (B by NOTIFY; B cannot serve
    // the bytes, which are in A's bucket, and need not).
    for (const hp of [a, b])
      await eventually('the uploaded page found', async () => (await pageStatus(hp)) !== 404, 5_000);
    for (const hp of [a, b]) {
      const res = await sqliteApi(hp, site).scoped(token, 'POST', '/api/v1/sqlite/query', query);
      expect(res.status).toBe(200);
    }
    expect(await misses()).toBe(before);
  });

  it('forgets a deleted site’s tokens on both replicas', async () => {
    const { site, token } = await warmed('grants-deleted');
    expect(await a.services.platform.deleteSite(site.siteId)).toBe(true);
    for (const hp of [a, b])
      await eventually(
        'the deleted site’s token refused',
        async () =>
          (await sqliteApi(hp, site).scoped(token, 'POST', '/api/v1/sqlite/query', query)).status === 401,
        5_000,
      );
  });
});
