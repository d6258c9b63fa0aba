import { describe, expect, it, vi } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { backends } from '../../support/hostplane.js';
import { sqliteApi } from '../../support/sqlite-api.js';

describe.each(backends)('SQLite tokens and end users on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `sq-${backend.replace(/\W/g, '')}`);
  const fresh = async (plan: 'free' | 'standard' = 'free') =>
    sqliteApi(fixture.hp, (await fixture.freshSite(plan)).site);

  it('checks the Origin of every scoped call and grants CORS to the site’s origin', async () => {
    const api = await fresh();
    const token = await api.token();
    const forbidden = { error: 'Forbidden', message: 'Request Origin is not permitted for this token.' };
    for (const origin of [
      undefined,
      'https://evil.example',
      `http://${api.site.slug}.localhost:9999`,
      'null',
    ]) {
      const res = await api.call('GET', '/api/v1/sqlite/auth/me', {
        headers: { 'x-sqlite-token': token, origin },
      });
      expect(res.status, String(origin)).toBe(403);
      expect(res.body).toMatchObject(forbidden);
    }
    const ok = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/me');
    expect(ok.status).toBe(401); // past the origin check: no user token yet
    expect(ok.headers.get('access-control-allow-origin')).toBe(api.origin);
    const preflight = await api.call('OPTIONS', '/api/v1/sqlite/query', {
      headers: { origin: api.origin, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('X-Sqlite-Token');
  });

  it('accepts only an Origin equal to the site’s serialised origin, and echoes only that one', async () => {
    const api = await fresh();
    const token = await api.token({ path: 'origin.sqlite', name: 'o', requireUserAuth: false });
    const host = new URL(api.origin).host;
    const lookalikes = [
      `${api.origin}/`,
      `${api.origin}/path?x=1`,
      `http://${host.toUpperCase()}`,
      `http://user@${host}`,
      `blob:${api.origin}/4d1c2c2e-54d4-4b8f-9f0b-1f0f3b1f8f3a`,
      `https://${host}`,
      `http://${api.site.slug}.localhost`,
      'null',
    ];
    for (const origin of lookalikes) {
      // query (the fast path when owned) and auth/me (Express) alike.
      for (const [method, path, json] of [
        ['POST', '/api/v1/sqlite/query', { sql: 'SELECT 1' }],
        ['GET', '/api/v1/sqlite/auth/me', undefined],
      ] as const) {
        const res = await api.call(method, path, { json, headers: { 'x-sqlite-token': token, origin } });
        expect(res.status, `${origin} ${path}`).toBe(403);
        expect(res.headers.get('access-control-allow-origin'), origin).toBeNull();
      }
      const preflight = await api.call('OPTIONS', '/api/v1/sqlite/query', {
        headers: { origin, 'access-control-request-method': 'POST' },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin'), origin).toBeNull();
    }
    const ok = await api.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 1 AS one' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(api.origin);
    // A preflight from a host that is no site is not granted either (it carries no token).
    const stranger = await api.call('OPTIONS', '/api/v1/sqlite/query', {
      headers: { origin: 'http://no-such-site-here.localhost:8080', 'access-control-request-method': 'POST' },
    });
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await api.call('OPTIONS', '/api/v1/sqlite/query', {
      headers: { origin: api.origin, 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBe(api.origin);
  });

  it('answers repeated preflights from memory, and grants a new site or domain promptly', async () => {
    const api = await fresh();
    const { platform } = fixture.hp.services;
    const bySlug = vi.spyOn(platform, 'siteBySlug');
    const byDomain = vi.spyOn(platform, 'siteByCustomDomain');
    const lookups = (spy: typeof bySlug, arg: string) => spy.mock.calls.filter(([a]) => a === arg).length;
    const preflight = async (origin: string) =>
      (
        await api.call('OPTIONS', '/api/v1/sqlite/query', {
          headers: { origin, 'access-control-request-method': 'POST' },
        })
      ).headers.get('access-control-allow-origin');
    try {
      const newSlug = `${api.site.slug}-later`;
      const domain = `${api.site.slug}.shop.example`;
      const origins = [api.origin, `http://${newSlug}.localhost:8080`, `http://${domain}:8080`];
      // Ten rounds at once and one after another: one lookup per host, the negative answers too.
      await Promise.all(origins.map(preflight));
      for (let round = 0; round < 10; round++) await Promise.all(origins.map(preflight));
      expect(await preflight(api.origin)).toBe(api.origin);
      expect(lookups(bySlug, api.site.slug)).toBe(1);
      expect(lookups(bySlug, newSlug)).toBe(1);
      expect(lookups(byDomain, domain)).toBe(1);
      expect(await preflight(origins[1]!)).toBeNull();
      expect(await preflight(origins[2]!)).toBeNull();
      // A site created meanwhile (announced to no one) is granted within seconds, …
      await fixture.hp.createSite(newSlug);
      await eventually(
        'the new site’s preflight granted',
        async () => (await preflight(origins[1]!)) !== null,
        5_000,
      );
      // … a domain attached at once (its NOTIFY drops every answer kept).
      await platform.applyRouting(api.site.siteId, api.site.slug, [domain]);
      await eventually(
        'the new domain’s preflight granted',
        async () => (await preflight(origins[2]!)) !== null,
        1_000,
      );
    } finally {
      bySlug.mockRestore();
      byDomain.mockRestore();
    }
  });
});
