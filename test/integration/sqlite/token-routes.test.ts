import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { sqliteTokens } from '../../../src/sqlite/tables.js';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';
import { sqliteApi, type Json } from '../../support/sqlite-api.js';

describe.each(backends)('SQLite tokens and end users on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `sq-${backend.replace(/\W/g, '')}`);
  const fresh = async (plan: 'free' | 'standard' = 'free') =>
    sqliteApi(fixture.hp, (await fixture.freshSite(plan)).site);

  it('installs a database: a scoped token for the site’s origins (client origins ignored)', async () => {
    const api = await fresh();
    const res = await api.install({
      path: 'data/app.sqlite',
      name: 'app',
      permissions: 'read',
      requireUserAuth: false,
      expiresInDays: 7,
      allowedOrigins: ['https://evil.example'],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      path: 'data/app.sqlite',
      permissions: 'read',
      requiresUserAuth: false,
      allowedOrigins: [api.origin],
    });
    expect(res.body.token).toMatch(/^hp_sqlite_/);
    expect(res.body.tokenId).toBeTypeOf('number');
    expect(Date.parse(res.body.expiresAt) - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    const defaults = await api.install({ path: 'data/app.sqlite', name: 'second' });
    expect(defaults.body).toMatchObject({
      permissions: 'readwrite',
      requiresUserAuth: true,
      expiresAt: null,
    });

    for (const [json, status] of [
      [{ path: 'data/app.txt', name: 'x' }, 400],
      [{ path: '../app.sqlite', name: 'x' }, 400],
      [{ path: 'app.db' }, 400],
      [{ path: 'app.db', name: 'x'.repeat(121) }, 400],
      [{ path: 'app.db', name: 'x', permissions: 'write' }, 400],
    ] as const) {
      expect((await api.install(json as Json)).status, JSON.stringify(json)).toBe(status);
    }
    const anonymous = await api.call('POST', '/api/v1/sqlite/auth/install', {
      json: { path: 'a.db', name: 'x' },
    });
    expect(anonymous.status).toBe(401);
  });

  it('caps databases per account by plan (free: 1), a second token for the same path is fine', async () => {
    const api = await fresh();
    await api.token({ path: 'one.sqlite', name: 'a' });
    await api.token({ path: 'one.sqlite', name: 'b' });
    const second = await api.install({ path: 'two.sqlite', name: 'c' });
    expect(second.status).toBe(403);
    expect(second.body).toMatchObject({
      error: 'SQLite count limit reached',
      limit: 1,
      current_plan: 'free',
    });
  });

  it('lists active, revoked and expired tokens; a revoked or expired token gets 401', async () => {
    const api = await fresh();
    const active = await api.install();
    const revoked = await api.install({ path: 'data/app.sqlite', name: 'to revoke' });
    const expired = await api.install({ path: 'data/app.sqlite', name: 'to expire', expiresInDays: 1 });
    await fixture.hp.services.store.db
      .update(sqliteTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(sqliteTokens.id, expired.body.tokenId));
    const del = await api.call('DELETE', `/api/v1/sqlite/auth/tokens/${revoked.body.tokenId}`, {
      headers: api.master,
    });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ success: true, tokenId: revoked.body.tokenId });
    const again = await api.call('DELETE', `/api/v1/sqlite/auth/tokens/${revoked.body.tokenId}`, {
      headers: api.master,
    });
    expect(again.body.revokedAt).toBe(del.body.revokedAt);

    const list = await api.call('GET', '/api/v1/sqlite/auth/tokens', { headers: api.master });
    expect(list.status).toBe(200);
    expect(list.body.tokens.map((t: Json) => t.name)).toEqual(['app', 'to revoke', 'to expire']);
    expect(Object.keys(list.body.tokens[0]).sort()).toEqual(
      [
        'allowedOrigins',
        'createdAt',
        'expiresAt',
        'id',
        'lastUsedAt',
        'name',
        'path',
        'permissions',
        'requiresUserAuth',
        'revokedAt',
      ].sort(),
    );
    expect(list.body.tokens[1].revokedAt).toBe(del.body.revokedAt);
    expect(JSON.stringify(list.body)).not.toContain(active.body.token);

    for (const token of [revoked.body.token, expired.body.token, 'hp_sqlite_unknown_token_value', '']) {
      const res = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me');
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({
        error: 'Unauthorized',
        message: 'Invalid, expired, or revoked SQLite token.',
      });
    }
    // Another site's key cannot revoke it.
    const other = await fresh();
    expect(
      (
        await other.call('DELETE', `/api/v1/sqlite/auth/tokens/${active.body.tokenId}`, {
          headers: other.master,
        })
      ).status,
    ).toBe(404);
  });
});
