import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { call, invitedOwner } from '../../support/account-api.js';

// Bounds an owner cannot exceed: sites per account (a setting), permanent keys and custom domain
// claims per site (fixed); and the site list answers from a bounded number of queries.
describe.each(backends)('account API caps on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  let auth: Record<string, string>;
  beforeAll(async () => {
    hp = await startHostplane(backend, {
      env: { HOSTPLANE_DOMAIN_VERIFICATION: 'off', HOSTPLANE_MAX_SITES_PER_ACCOUNT: '2' },
    });
    auth = (await invitedOwner(hp, `caps-${tag}@example.com`)).bearer;
  });
  afterAll(() => hp?.stop());

  it('refuses a site, a key or a domain over its cap with a clear 403', async () => {
    const ids: number[] = [];
    for (const slug of [`cap-a-${tag}`, `cap-b-${tag}`]) {
      const res = await call(hp, 'POST', '/api/v1/account/sites', { json: { slug }, headers: auth });
      expect(res.status).toBe(201);
      ids.push(res.body.site.id as number);
    }
    const third = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: `cap-c-${tag}` },
      headers: auth,
    });
    expect(third.status).toBe(403);
    expect(third.body).toMatchObject({ error: 'LIMIT_REACHED', limit: 2 });
    expect(third.body.message).toContain('2 sites');

    const [siteId, otherId] = ids as [number, number];
    // The site's first key came with it: 19 more reach the cap of 20.
    for (let i = 0; i < 19; i++)
      expect((await call(hp, 'POST', `/api/v1/account/sites/${siteId}/keys`, { headers: auth })).status).toBe(
        201,
      );
    const key = await call(hp, 'POST', `/api/v1/account/sites/${siteId}/keys`, { headers: auth });
    expect(key.status).toBe(403);
    expect(key.body).toMatchObject({ error: 'LIMIT_REACHED', limit: 20 });

    for (let i = 0; i < 20; i++) {
      const res = await call(hp, 'POST', `/api/v1/account/sites/${siteId}/domains`, {
        json: { hostname: `d${i}.caps-${tag}.example` },
        headers: auth,
      });
      expect(res.status).toBe(201);
    }
    const domain = await call(hp, 'POST', `/api/v1/account/sites/${siteId}/domains`, {
      json: { hostname: `one-too-many.caps-${tag}.example` },
      headers: auth,
    });
    expect(domain.status).toBe(403);
    expect(domain.body).toMatchObject({ error: 'LIMIT_REACHED', limit: 20 });
    // Re-sending a domain the site has is no new claim.
    const again = await call(hp, 'POST', `/api/v1/account/sites/${siteId}/domains`, {
      json: { hostname: `d0.caps-${tag}.example` },
      headers: auth,
    });
    expect(again.status).toBe(201);

    // The list gathers every site's domains in one query: each site gets its own.
    await call(hp, 'POST', `/api/v1/account/sites/${otherId}/domains`, {
      json: { hostname: `other.caps-${tag}.example` },
      headers: auth,
    });
    const list = await call(hp, 'GET', '/api/v1/account/sites', { headers: auth });
    expect(list.status).toBe(200);
    const byId = new Map(
      (list.body.sites as Array<{ id: number; custom_domains: string[] }>).map((s) => [
        s.id,
        s.custom_domains,
      ]),
    );
    expect(byId.get(siteId)).toHaveLength(20);
    expect(byId.get(otherId)).toEqual([`other.caps-${tag}.example`]);
  });
});
