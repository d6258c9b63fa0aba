import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domains } from '../../../src/platform/domains.js';
import { sqliteDatabases, sqliteReplicaSweeps } from '../../../src/sqlite/tables.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { call, invitedOwner } from '../../support/account-api.js';
import { contactFields } from '../../support/forms-api.js';
import { eventuallyPasses } from '../../support/eventually.js';
import { sqliteApi } from '../../support/sqlite-api.js';

describe.each(backends)('account sites, keys, domains and forms on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  let auth: Record<string, string>;
  let email: string;
  beforeAll(async () => {
    hp = await startHostplane(backend, { env: { HOSTPLANE_DOMAIN_VERIFICATION: 'off' } });
    const owner = await invitedOwner(hp, `sites-${tag}@example.com`);
    auth = owner.bearer;
    email = owner.email;
  });
  afterAll(() => hp?.stop());

  const createSite = async (slug: string) => {
    const res = await call(hp, 'POST', '/api/v1/account/sites', { json: { slug }, headers: auth });
    if (res.status !== 201) throw new Error(`create ${slug}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { site: { id: number; slug: string }; api_key: string };
  };

  it('creates sites with the slug rules, lists them with usage, and refuses another account’s', async () => {
    const bad = await call(hp, 'POST', '/api/v1/account/sites', { json: { slug: '-Bad-' }, headers: auth });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('Invalid slug');
    const created = await createSite(`own-${tag}`);
    expect(created.api_key).toMatch(/^hp_live_/);
    expect(created.site).toMatchObject({
      slug: `own-${tag}`,
      url: `http://own-${tag}.localhost:8080`,
      files: { used: 0, limit: 200 },
      storage_bytes: { used: 0, limit: 500 * 1024 * 1024 },
      custom_domains: [],
    });
    const taken = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: `own-${tag}` },
      headers: auth,
    });
    expect(taken.status).toBe(409);
    const list = await call(hp, 'GET', '/api/v1/account/sites', { headers: auth });
    expect(list.body.sites.map((s: { slug: string }) => s.slug)).toContain(`own-${tag}`);
    const me = await call(hp, 'GET', '/api/v1/account', { headers: auth });
    expect(me.body.usage.sites).toEqual([
      expect.objectContaining({ id: created.site.id, files: { used: 0, limit: 200 } }),
    ]);

    const other = await hp.createSite(`theirs-${tag}`);
    for (const [method, path] of [
      ['GET', `/api/v1/account/sites/${other.siteId}`],
      ['DELETE', `/api/v1/account/sites/${other.siteId}`],
      ['GET', `/api/v1/account/sites/${other.siteId}/keys`],
      ['POST', `/api/v1/account/sites/${other.siteId}/keys`],
    ] as const) {
      const res = await call(hp, method, path, { headers: auth });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    // The session reaches the site's public API too (site_id picks the site).
    const upload = await call(hp, 'POST', `/api/v1/files/upload?site_id=${created.site.id}`, {
      json: { path: 'index.html', content: '<h1>hi</h1>' },
      headers: auth,
    });
    expect(upload.status).toBe(200);
    expect(
      (await call(hp, 'GET', `/api/v1/account/sites/${created.site.id}`, { headers: auth })).body.site.files
        .used,
    ).toBe(1);
  });

  it('creates, lists (with last use) and revokes permanent keys', async () => {
    const { site } = await createSite(`keys-${tag}`);
    const made = await call(hp, 'POST', `/api/v1/account/sites/${site.id}/keys`, { headers: auth });
    expect(made.status).toBe(201);
    const key = made.body.api_key as string;
    expect(made.body.key.prefix).toBe(key.slice(0, 12));
    const info = await call(hp, 'GET', '/api/v1/hosting-info', { headers: { 'x-api-key': key } });
    expect(info.status).toBe(200);
    const listed = await call(hp, 'GET', `/api/v1/account/sites/${site.id}/keys`, { headers: auth });
    const keys = listed.body.keys as Array<{ id: number; last_used_at: string | null }>;
    expect(keys).toHaveLength(2);
    expect(JSON.stringify(listed.body)).not.toContain(key);
    expect(keys.find((k) => k.id === made.body.key.id)!.last_used_at).not.toBeNull();
    const revoked = await call(hp, 'DELETE', `/api/v1/account/sites/${site.id}/keys/${made.body.key.id}`, {
      headers: auth,
    });
    expect(revoked.status).toBe(200);
    expect((await call(hp, 'GET', '/api/v1/hosting-info', { headers: { 'x-api-key': key } })).status).toBe(
      401,
    );
    const again = await call(hp, 'DELETE', `/api/v1/account/sites/${site.id}/keys/${made.body.key.id}`, {
      headers: auth,
    });
    expect(again.status).toBe(404);
    expect(
      (await call(hp, 'GET', `/api/v1/account/sites/${site.id}/keys`, { headers: auth })).body.keys,
    ).toHaveLength(1);
  });

  it('deletes a site with its files and forms: its key, host and form stop working', async () => {
    const created = await createSite(`gone-${tag}`);
    const key = { 'x-api-key': created.api_key };
    const up = await call(hp, 'POST', '/api/v1/files/upload', {
      json: { path: 'index.html', content: '<p>bye</p>' },
      headers: key,
    });
    expect(up.status).toBe(200);
    const form = await call(hp, 'POST', '/api/v1/forms', {
      json: { name: 'Contact', fields: contactFields },
      headers: key,
    });
    expect(form.status).toBe(201);
    const served = await hp.request('/', { host: `gone-${tag}.localhost:8080` });
    expect(served.status).toBe(200);
    const sqlite = sqliteApi(hp, {
      slug: created.site.slug,
      apiKey: created.api_key,
      accountId: 0,
      siteId: created.site.id,
      email,
    });
    const sqliteToken = await sqlite.token({ path: 'data/app.sqlite', name: 'app', requireUserAuth: false });
    // Opened: this process's shard holds its lease when the site goes.
    const opened = await sqlite.call('POST', '/api/v1/sqlite/query', {
      json: { sql: 'SELECT 1' },
      headers: { 'x-sqlite-token': sqliteToken, origin: sqlite.origin },
    });
    expect(opened.status).toBe(200);
    const [database] = await hp.services.store.db
      .select({ id: sqliteDatabases.id })
      .from(sqliteDatabases)
      .where(eq(sqliteDatabases.siteId, created.site.id));
    const me = await call(hp, 'GET', '/api/v1/account', { headers: auth });
    expect(me.body.usage.sqlite_databases.used).toBeGreaterThanOrEqual(1);
    const deleted = await call(hp, 'DELETE', `/api/v1/account/sites/${created.site.id}`, { headers: auth });
    expect(deleted.status).toBe(200);
    expect((await call(hp, 'GET', '/api/v1/hosting-info', { headers: key })).status).toBe(401);
    // Edges forget the site when its removal is notified (asynchronous on PostgreSQL).
    await eventuallyPasses('the host answers 404', async () =>
      expect((await hp.request('/', { host: `gone-${tag}.localhost:8080` })).status).toBe(404),
    );
    expect(
      (await hp.request(`/f/${form.body.form.uuid as string}`, { method: 'POST', json: { name: 'x' } }))
        .status,
    ).toBe(404);
    expect(
      (await call(hp, 'GET', `/api/v1/account/sites/${created.site.id}`, { headers: auth })).status,
    ).toBe(404);
    // The SQLite database went by its own removal path: its token no longer opens anything.
    const query = await sqlite.call('POST', '/api/v1/sqlite/query', {
      json: { sql: 'SELECT 1' },
      headers: { 'x-sqlite-token': sqliteToken, origin: sqlite.origin },
    });
    expect(query.status).toBe(401);
    const after = await call(hp, 'GET', '/api/v1/account', { headers: auth });
    expect(after.body.usage.sqlite_databases.used).toBe(me.body.usage.sqlite_databases.used - 1);
    // Its replica in S3 is swept again once the shard's lease is over (nothing replicates without S3).
    const queued = await hp.services.store.db
      .select()
      .from(sqliteReplicaSweeps)
      .where(eq(sqliteReplicaSweeps.databaseId, database!.id));
    expect(queued).toHaveLength(backend === 'postgres+s3' ? 1 : 0);
  });

  it('attaches and detaches custom domains (verification off) and refuses the platform’s names', async () => {
    const { site } = await createSite(`dom-${tag}`);
    const up = await call(hp, 'POST', `/api/v1/files/upload?site_id=${site.id}`, {
      json: { path: 'index.html', content: 'custom' },
      headers: auth,
    });
    expect(up.status).toBe(200);
    const attached = await call(hp, 'POST', `/api/v1/account/sites/${site.id}/domains`, {
      json: { hostname: `WWW.Dom-${tag}.example.` },
      headers: auth,
    });
    expect(attached.status).toBe(201);
    expect(attached.body.domain).toEqual({ hostname: `www.dom-${tag}.example`, status: 'active' });
    await eventuallyPasses('the domain serves the site', async () =>
      expect((await hp.request('/', { host: `www.dom-${tag}.example` })).status).toBe(200),
    );
    for (const hostname of ['localhost', `x.localhost`, 'not a host', 'a..b']) {
      const res = await call(hp, 'POST', `/api/v1/account/sites/${site.id}/domains`, {
        json: { hostname },
        headers: auth,
      });
      expect(res.status, hostname).toBe(400);
    }
    const { site: second } = await createSite(`dom2-${tag}`);
    const taken = await call(hp, 'POST', `/api/v1/account/sites/${second.id}/domains`, {
      json: { hostname: `www.dom-${tag}.example` },
      headers: auth,
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe('DOMAIN_TAKEN');
    const detached = await call(
      hp,
      'DELETE',
      `/api/v1/account/sites/${site.id}/domains/www.dom-${tag}.example`,
      { headers: auth },
    );
    expect(detached.status).toBe(200);
    await eventuallyPasses('the domain no longer serves', async () =>
      expect((await hp.request('/', { host: `www.dom-${tag}.example` })).status).toBe(404),
    );
  });

  it('proves a domain by its DNS TXT record when verification is dns', async () => {
    const { site } = await createSite(`dns-${tag}`);
    const records = new Map<string, string[]>();
    const domains = new Domains(hp.services.store.db, {
      verification: 'dns',
      reserved: () => false,
      lookup: async (name) => records.get(name) ?? [],
    });
    const pending = await domains.request(site.id, `shop-${tag}.example`);
    expect(pending.status).toBe('pending');
    expect(pending.verification!.name).toBe(`_hostplane.shop-${tag}.example`);
    expect(pending.verification!.value).toMatch(/^hostplane-verify=[0-9a-f]{32}$/);
    await expect(domains.verify(site.id, `shop-${tag}.example`)).rejects.toMatchObject({
      code: 'DOMAIN_NOT_VERIFIED',
    });
    records.set(pending.verification!.name, ['v=spf1 -all', pending.verification!.value]);
    expect(await domains.verify(site.id, `shop-${tag}.example`)).toEqual({
      hostname: `shop-${tag}.example`,
      status: 'active',
    });
    const listed = await call(hp, 'GET', `/api/v1/account/sites/${site.id}/domains`, { headers: auth });
    expect(listed.body.domains).toEqual([{ hostname: `shop-${tag}.example`, status: 'active' }]);
  });

  it('reads and writes a form’s notification address', async () => {
    const { site, api_key } = await createSite(`notify-${tag}`);
    const form = await call(hp, 'POST', '/api/v1/forms', {
      json: { name: 'Contact', fields: contactFields },
      headers: { 'x-api-key': api_key },
    });
    const path = `/api/v1/account/sites/${site.id}/forms/${form.body.form.id as number}/notification`;
    const read = await call(hp, 'GET', path, { headers: auth });
    expect(read.body).toMatchObject({ notification_email: null, effective_email: email });
    const set = await call(hp, 'PUT', path, {
      json: { notification_email: 'Team@Example.com' },
      headers: auth,
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      notification_email: 'team@example.com',
      effective_email: 'team@example.com',
    });
    const bad = await call(hp, 'PUT', path, {
      json: { notification_email: 'not an address' },
      headers: auth,
    });
    expect(bad.status).toBe(400);
    const cleared = await call(hp, 'PUT', path, { json: { notification_email: null }, headers: auth });
    expect(cleared.body.notification_email).toBeNull();
    const missing = await call(hp, 'GET', `/api/v1/account/sites/${site.id}/forms/999999/notification`, {
      headers: auth,
    });
    expect(missing.status).toBe(404);
    const me = await call(hp, 'GET', '/api/v1/account', { headers: auth });
    expect(me.body.usage.forms.used).toBeGreaterThanOrEqual(1);
  });

  it('answers 401 without a session on every account route', async () => {
    for (const [method, path] of [
      ['GET', '/api/v1/account'],
      ['GET', '/api/v1/account/sites'],
      ['POST', '/api/v1/account/sites'],
      ['GET', '/api/v1/account/sessions'],
    ] as const) {
      expect((await call(hp, method, path)).status, `${method} ${path}`).toBe(401);
    }
  });
});
