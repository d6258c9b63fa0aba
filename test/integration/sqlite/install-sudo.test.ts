import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../../src/platform/secrets.js';
import { call, invitedOwner, PASSWORD } from '../../support/account-api.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { sqliteApi } from '../../support/sqlite-api.js';

// Issue 28, sudo mode through the SQLite door: a temporary key carries the sudo state of the
// session that minted it, and the SQLite routes that mint a lasting credential (install's scoped
// token, an end user registered or given a password with the master key) refuse it with 403
// SUDO_REQUIRED while that session is not in sudo mode, so a stolen session cannot turn its
// short-lived key into a credential that outlives it (docs/developers/security.md "Sudo mode").
describe.each(backends)('SQLite credentials minted with a temporary key on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  let n = 0;
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  /** A new owner (fresh sign-in) with a site: its session, permanent key and SQLite API. */
  const ownerWithSite = async () => {
    const slug = `sq-sudo-${tag}-${++n}`;
    const owner = await invitedOwner(hp, `${slug}@example.com`);
    const created = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    const siteId = created.body.site.id as number;
    const apiKey = created.body.api_key as string;
    const api = sqliteApi(hp, { siteId, accountId: 0, slug, apiKey, email: owner.email });
    return { ...owner, siteId, apiKey, api };
  };
  const tempKey = async (bearer: Record<string, string>, siteId: number) => {
    const minted = await call(hp, 'POST', '/api/keys/generate-temp', {
      json: { storage_folder_id: siteId },
      headers: bearer,
    });
    expect(minted.status).toBe(200);
    return minted.body.temp_api_key as string;
  };
  /** Moves the session's last confirmation back past the 15 minutes of sudo mode. */
  const age = (token: string) =>
    hp.services.store.db.execute(
      sql`update account_sessions set confirmed_at = now() - interval '16 minutes'
          where token_hash = ${hashSecret(token)}`,
    );
  const install = (api: ReturnType<typeof sqliteApi>, key: string, path = 'db/app.sqlite') =>
    api.call('POST', '/api/v1/sqlite/auth/install', {
      json: { path, name: 'x', requireUserAuth: false },
      headers: { 'x-api-key': key },
    });

  it('an aged session’s temporary key may not install nor register with the master key; after /sudo the same key may', async () => {
    const owner = await ownerWithSite();
    const scoped = await owner.api.token({ path: 'db/app.sqlite', name: 'page', requireUserAuth: false });
    const first = await owner.api.register(scoped, 'admin@example.com');
    expect(first.status).toBe(201);
    await age(owner.token);
    const key = await tempKey(owner.bearer, owner.siteId);

    const refused = await install(owner.api, key);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('SUDO_REQUIRED');
    expect(refused.body.message).toMatch(/POST \/api\/v1\/account\/sudo/);
    // Nothing was made: no token beside the page's, no second database.
    const tokens = await owner.api.call('GET', '/api/v1/sqlite/auth/tokens', {
      headers: { 'x-api-key': key },
    });
    expect(tokens.status).toBe(200);
    expect(tokens.body.tokens).toHaveLength(1);
    expect((await install(owner.api, key, 'db/other.sqlite')).body.error).toBe('SUDO_REQUIRED');
    const databases = await owner.api.call('GET', '/api/v1/sqlite/databases', {
      headers: { 'x-api-key': key },
    });
    expect(databases.body.databases.map((d: { path: string }) => d.path)).toEqual(['db/app.sqlite']);

    const registered = await owner.api.register(scoped, 'thief@example.com', 'correct horse battery', {
      'x-api-key': key,
    });
    expect(registered.status).toBe(403);
    expect(registered.body.error).toBe('SUDO_REQUIRED');
    const reset = await owner.api.scoped(
      scoped,
      'POST',
      `/api/v1/sqlite/auth/users/${first.body.user.id}/reset-password`,
      { newPassword: 'a password the thief knows' },
      { 'x-api-key': key },
    );
    expect(reset.status).toBe(403);
    expect(reset.body.error).toBe('SUDO_REQUIRED');
    // Managing what exists stays open to the key.
    const users = await owner.api.scoped(scoped, 'GET', '/api/v1/sqlite/auth/users', undefined, {
      'x-api-key': key,
    });
    expect(users.status).toBe(200);
    expect(users.body.users).toHaveLength(1);

    // The key reads its session's state at each call: confirming the password opens it at once.
    const confirmed = await call(hp, 'POST', '/api/v1/account/sudo', {
      json: { password: PASSWORD },
      headers: owner.bearer,
    });
    expect(confirmed.status).toBe(200);
    const installed = await install(owner.api, key);
    expect(installed.status).toBe(200);
    expect(installed.body.token).toMatch(/^hp_sqlite_/);
    const later = await owner.api.register(scoped, 'second@example.com', 'correct horse battery', {
      'x-api-key': key,
    });
    expect(later.status).toBe(201);
  });

  it('a fresh sign-in’s temporary key installs and registers; a permanent key needs no sudo mode', async () => {
    const owner = await ownerWithSite();
    const key = await tempKey(owner.bearer, owner.siteId);
    const installed = await install(owner.api, key);
    expect(installed.status).toBe(200);
    const registered = await owner.api.register(
      installed.body.token as string,
      'admin@example.com',
      'correct horse battery',
      { 'x-api-key': key },
    );
    expect(registered.status).toBe(201);

    await age(owner.token);
    const byPermanent = await install(owner.api, owner.apiKey);
    expect(byPermanent.status).toBe(200);
    const byPermanentRegister = await owner.api.register(
      byPermanent.body.token as string,
      'second@example.com',
      'correct horse battery',
      { 'x-api-key': owner.apiKey },
    );
    expect(byPermanentRegister.status).toBe(201);
  });

  it('an operator’s session mints temporary keys that never need sudo mode', async () => {
    const owner = await ownerWithSite();
    const operator = await hp.services.platform.accounts.createSession(owner.email);
    await age(operator.token);
    const key = await tempKey({ authorization: `Bearer ${operator.token}` }, owner.siteId);
    expect((await install(owner.api, key)).status).toBe(200);
  });
});
