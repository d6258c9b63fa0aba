import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { sqliteSessions } from '../../../src/sqlite/tables.js';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';
import { sqliteApi, type Json } from '../../support/sqlite-api.js';

describe.each(backends)('SQLite tokens and end users on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `sq-${backend.replace(/\W/g, '')}`);
  const fresh = async (plan: 'free' | 'standard' = 'free') =>
    sqliteApi(fixture.hp, (await fixture.freshSite(plan)).site);

  it('registers: never public, the first user by the master key is admin, later ones users', async () => {
    const api = await fresh();
    const token = await api.token();
    const onlyToken = await api.register(token, 'a@example.com', 'correct horse battery', {});
    expect(onlyToken.status).toBe(401);
    const neither = await api.call('POST', '/api/v1/sqlite/auth/register', {
      json: { email: 'a@example.com', password: 'x' },
    });
    expect(neither.status).toBe(401);
    const other = await fresh();
    const foreignKey = await api.register(token, 'a@example.com', 'correct horse battery', {
      'x-api-key': other.site.apiKey,
    });
    expect(foreignKey.status).toBe(403);

    const admin = await api.register(token, '  Admin@Example.COM ');
    expect(admin.status).toBe(201);
    expect(admin.body.user).toMatchObject({
      email: 'admin@example.com',
      role: 'admin',
      disabled: false,
      displayName: null,
    });
    expect(Object.keys(admin.body.user).sort()).toEqual(['disabled', 'displayName', 'email', 'id', 'role']);
    const byKey = await api.register(token, 'second@example.com');
    expect(byKey.body.user.role).toBe('user');

    const adminSession = await api.login(token, 'admin@example.com');
    const byAdmin = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/auth/register',
      { email: 'third@example.com', password: 'another good one', displayName: 'Third' },
      { 'x-sqlite-user-token': adminSession },
    );
    expect(byAdmin.status).toBe(201);
    expect(byAdmin.body.user).toMatchObject({ role: 'user', displayName: 'Third' });
    const userSession = await api.login(token, 'second@example.com');
    const byUser = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/auth/register',
      { email: 'x@example.com', password: 'another good one' },
      { 'x-sqlite-user-token': userSession },
    );
    expect(byUser.status).toBe(403);

    const cases: Array<[Json, number, string]> = [
      [{ email: 'not an email', password: 'long enough pw' }, 400, 'INVALID_EMAIL'],
      [{ email: `${'a'.repeat(250)}@x.io`, password: 'long enough pw' }, 400, 'INVALID_EMAIL'],
      [{ email: 'p@example.com', password: 'short' }, 400, 'PASSWORD_TOO_SHORT'],
      [{ email: 'p@example.com', password: 'password123' }, 400, 'PASSWORD_TOO_COMMON'],
      [{ email: 'ADMIN@example.com', password: 'long enough pw' }, 409, 'EMAIL_ALREADY_REGISTERED'],
    ];
    for (const [json, status, error] of cases) {
      const res = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/register', json, api.master);
      expect(res.status, JSON.stringify(json)).toBe(status);
      expect(res.body.error).toBe(error);
    }
    // The document's maxLength (254 code points) holds for the body as sent, before trimming.
    const padded = { email: `\n\t${'b'.repeat(240)}@x.io${' '.repeat(20)}`, password: 'long enough pw' };
    expect((await api.scoped(token, 'POST', '/api/v1/sqlite/auth/register', padded, api.master)).status).toBe(
      400,
    );
    // Free plan: 3 users per database.
    const over = await api.register(token, 'fourth@example.com');
    expect(over.status).toBe(402);
    expect(over.body.error).toBe('USER_POOL_LIMIT_REACHED');
  });

  it('logs in with one answer for a wrong email or password, and keeps sessions to their database', async () => {
    const api = await fresh('standard');
    const token = await api.token();
    await api.register(token, 'ann@example.com');
    const wrongPassword = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/login', {
      email: 'ann@example.com',
      password: 'wrong password!',
    });
    const unknownEmail = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/login', {
      email: 'nobody@example.com',
      password: 'wrong password!',
    });
    expect(wrongPassword.status).toBe(401);
    expect(unknownEmail.status).toBe(401);
    expect(wrongPassword.body).toEqual(unknownEmail.body);
    expect(wrongPassword.body.error).toBe('INVALID_CREDENTIALS');

    const login = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/login', {
      email: ' ANN@example.com',
      password: 'correct horse battery',
    });
    expect(login.status).toBe(200);
    expect(login.headers.get('cache-control')).toBe('no-store');
    expect(login.body.userToken).toMatch(/^[0-9a-f]{64}$/);
    expect(Date.parse(login.body.expiresAt) - Date.now()).toBeGreaterThan(29.9 * 86_400_000);
    expect(login.body.user).toMatchObject({ email: 'ann@example.com', role: 'admin' });
    expect(login.body.user.lastLoginAt).toBeTypeOf('string');

    const me = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me', undefined, {
      'x-sqlite-user-token': login.body.userToken,
    });
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ email: 'ann@example.com', createdAt: expect.any(String) });
    expect(JSON.stringify(me.body)).not.toMatch(/argon2|password/i);
    const missing = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me');
    expect(missing.status).toBe(401);
    expect(missing.body.hint_for_ai).toBeTypeOf('string');

    // A session of another database (same site, another path) is refused.
    const otherDb = await api.token({ path: 'other.sqlite', name: 'other' });
    const cross = await api.scoped(otherDb, 'GET', '/api/v1/sqlite/auth/me', undefined, {
      'x-sqlite-user-token': login.body.userToken,
    });
    expect(cross.status).toBe(401);

    expect(
      (
        await api.scoped(token, 'POST', '/api/v1/sqlite/auth/logout', undefined, {
          'x-sqlite-user-token': login.body.userToken,
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await api.scoped(token, 'POST', '/api/v1/sqlite/auth/logout', undefined, {
          'x-sqlite-user-token': login.body.userToken,
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me', undefined, {
          'x-sqlite-user-token': login.body.userToken,
        })
      ).status,
    ).toBe(401);
  });

  it('extends a session used with under 7 days left, and refuses an expired one', async () => {
    const api = await fresh();
    const token = await api.token();
    await api.register(token, 'ann@example.com');
    const session = await api.login(token, 'ann@example.com');
    const db = fixture.hp.services.store.db;
    const me = () =>
      api.scoped(token, 'GET', '/api/v1/sqlite/auth/me', undefined, { 'x-sqlite-user-token': session });
    const hash = createHash('sha256').update(session).digest('hex');
    const [mine] = await db.select().from(sqliteSessions).where(eq(sqliteSessions.tokenHash, hash));
    if (!mine) throw new Error('the session is stored by its sha256');
    await db
      .update(sqliteSessions)
      .set({ expiresAt: new Date(Date.now() + 3 * 86_400_000) })
      .where(eq(sqliteSessions.id, mine.id));
    expect((await me()).status).toBe(200);
    const [extended] = await db.select().from(sqliteSessions).where(eq(sqliteSessions.id, mine.id));
    expect(extended!.expiresAt.getTime() - Date.now()).toBeGreaterThan(29.9 * 86_400_000);
    // Eight days left: no write on the hot path.
    await db
      .update(sqliteSessions)
      .set({ expiresAt: new Date(Date.now() + 8 * 86_400_000) })
      .where(eq(sqliteSessions.id, mine.id));
    expect((await me()).status).toBe(200);
    const [kept] = await db.select().from(sqliteSessions).where(eq(sqliteSessions.id, mine.id));
    expect(kept!.expiresAt.getTime() - Date.now()).toBeLessThan(8.1 * 86_400_000);
    await db
      .update(sqliteSessions)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(sqliteSessions.id, mine.id));
    expect((await me()).status).toBe(401);
  });

  it('changes passwords (other sessions end), and enforces the admin guard rails', async () => {
    const api = await fresh('standard');
    const token = await api.token();
    const adminId = (await api.register(token, 'admin@example.com')).body.user.id as number;
    const userId = (await api.register(token, 'user@example.com')).body.user.id as number;
    const s1 = await api.login(token, 'admin@example.com');
    const s2 = await api.login(token, 'admin@example.com');
    const as = (session: string) => ({ 'x-sqlite-user-token': session });

    const wrong = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/auth/change-password',
      { currentPassword: 'nope nope', newPassword: 'a brand new secret' },
      as(s1),
    );
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('INVALID_CREDENTIALS');
    const changed = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/auth/change-password',
      { currentPassword: 'correct horse battery', newPassword: 'a brand new secret' },
      as(s1),
    );
    expect(changed.status).toBe(204);
    expect((await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me', undefined, as(s1))).status).toBe(200);
    expect((await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me', undefined, as(s2))).status).toBe(401);

    const userSession = await api.login(token, 'user@example.com');
    const notAdmin = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/users', undefined, as(userSession));
    expect(notAdmin.status).toBe(403);
    expect(notAdmin.body.message).toBe('Admin role required');
    const users = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/users', undefined, as(s1));
    expect(users.body.users.map((u: Json) => u.email)).toEqual(['admin@example.com', 'user@example.com']);

    const patch = (id: number, json: Json, session = s1) =>
      api.scoped(token, 'PATCH', `/api/v1/sqlite/auth/users/${id}`, json, as(session));
    expect((await patch(adminId, { role: 'user' })).body).toMatchObject({
      error: 'Forbidden',
      code: 'CANNOT_CHANGE_OWN_ROLE',
    });
    expect((await patch(adminId, { disabled: true })).body.code).toBe('CANNOT_DISABLE_SELF');
    expect(
      (await api.scoped(token, 'DELETE', `/api/v1/sqlite/auth/users/${adminId}`, undefined, as(s1))).body
        .code,
    ).toBe('CANNOT_DELETE_SELF');
    expect((await patch(userId, { displayName: 'Renamed' })).body.user.displayName).toBe('Renamed');
    expect((await patch(999999, { displayName: 'x' })).status).toBe(404);

    // Promote the user, who then cannot demote the other admin below one active admin.
    expect((await patch(userId, { role: 'admin' })).body.user.role).toBe('admin');
    const promoted = await api.login(token, 'user@example.com');
    expect((await patch(adminId, { disabled: true }, promoted)).status).toBe(200); // s1's user disabled
    expect((await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me', undefined, as(s1))).status).toBe(401); // its sessions ended
    const disabledLogin = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/login', {
      email: 'admin@example.com',
      password: 'a brand new secret',
    });
    expect(disabledLogin.status).toBe(403);
    expect(disabledLogin.body.error).toBe('ACCOUNT_DISABLED');
    const third = (await api.register(token, 'third@example.com')).body.user.id as number;
    expect((await patch(third, { role: 'admin' }, promoted)).status).toBe(200);
    const thirdSession = await api.login(token, 'third@example.com');
    // Two admins demoting each other at once: one wins; the other, no longer an admin (or the last
    // one left, if both got past the role check), is refused, and the pool keeps an active admin.
    const [a, b] = await Promise.all([
      patch(third, { role: 'user' }, promoted),
      patch(userId, { role: 'user' }, thirdSession),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 403]);
    const refused = a.status === 403 ? a.body : b.body;
    expect(refused.code === 'LAST_ADMIN' || refused.message === 'Admin role required').toBe(true);
    const remaining = await api.scoped(
      token,
      'GET',
      '/api/v1/sqlite/auth/users',
      undefined,
      as(a.status === 200 ? promoted : thirdSession),
    );
    expect(remaining.body.users.filter((u: Json) => u.role === 'admin' && !u.disabled)).toHaveLength(1);

    // Reset password: the target's sessions end.
    const victim = (await api.register(token, 'fourth@example.com')).body.user.id as number;
    const victimSession = await api.login(token, 'fourth@example.com');
    const admin = a.status === 200 ? promoted : thirdSession;
    expect(
      (
        await api.scoped(
          token,
          'POST',
          `/api/v1/sqlite/auth/users/${victim}/reset-password`,
          { newPassword: 'reset by the admin' },
          as(admin),
        )
      ).status,
    ).toBe(204);
    expect(
      (await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me', undefined, as(victimSession))).status,
    ).toBe(401);
    await api.login(token, 'fourth@example.com', 'reset by the admin');
    expect(
      (await api.scoped(token, 'DELETE', `/api/v1/sqlite/auth/users/${victim}`, undefined, as(admin))).status,
    ).toBe(204);
    expect(
      (await api.scoped(token, 'DELETE', `/api/v1/sqlite/auth/users/${victim}`, undefined, as(admin))).status,
    ).toBe(404);
  });

  it('limits register and login to 5 a minute per client address, one shared bucket (429 + Retry-After)', async () => {
    const api = await fresh('standard');
    const token = await api.token();
    await api.register(token, 'ann@example.com');
    const ip = { 'x-forwarded-for': '203.0.113.77' };
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push(
        (
          await api.scoped(
            token,
            'POST',
            '/api/v1/sqlite/auth/login',
            { email: 'ann@example.com', password: 'wrong password!' },
            ip,
          )
        ).status,
      );
    for (let i = 0; i < 2; i++)
      statuses.push(
        (
          await api.scoped(
            token,
            'POST',
            '/api/v1/sqlite/auth/register',
            { email: `r${i}@example.com`, password: 'long enough pw' },
            { ...ip, ...api.master },
          )
        ).status,
      );
    const limited = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/auth/login',
      { email: 'ann@example.com', password: 'correct horse battery' },
      ip,
    );
    expect(statuses).toEqual([401, 401, 401, 201, 201]);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
