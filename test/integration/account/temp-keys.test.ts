import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { browserSignIn, call, invitedOwner, PASSWORD, tokenOf } from '../../support/account-api.js';
import type { Json } from '../../support/forms-api.js';
import { Accounts } from '../../../src/platform/accounts.js';
import { hashSecret } from '../../../src/platform/secrets.js';
import { MAX_TEMP_KEYS_PER_SITE } from '../../../src/platform/keys.js';

// Finding 2 of issue 28: a temporary key dies with the session that minted it, and the owner sees
// and revokes the live ones (docs/developers/security.md "Temporary keys and the session that minted them").
describe.each(backends)('temporary keys bound to their session on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  /** An invited owner with one site. */
  const ownerWithSite = async (name: string) => {
    const owner = await invitedOwner(hp, `${name}-${tag}@example.com`);
    const site = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: `${name}-${tag}` },
      headers: owner.bearer,
    });
    expect(site.status).toBe(201);
    return { ...owner, siteId: site.body.site.id as number };
  };
  const signIn = async (email: string, password = PASSWORD) => {
    const res = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: { email, password },
      headers: { 'user-agent': 'curl/8.5.0' },
    });
    expect(res.status).toBe(200);
    return { authorization: `Bearer ${res.body.token as string}` };
  };
  const mint = async (auth: Record<string, string>, siteId?: number) => {
    const res = await call(hp, 'POST', '/api/keys/generate-temp', {
      json: siteId === undefined ? {} : { storage_folder_id: siteId },
      headers: auth,
    });
    expect(res.status).toBe(200);
    return res.body.temp_api_key as string;
  };
  const works = async (key: string) =>
    (await call(hp, 'GET', '/api/v1/hosting-info', { headers: { 'x-api-key': key } })).status;
  const listed = async (auth: Record<string, string>, siteId: number) => {
    const res = await call(hp, 'GET', `/api/v1/account/sites/${siteId}/temporary-keys`, { headers: auth });
    expect(res.status).toBe(200);
    return res.body.temporary_keys as Json[];
  };

  it('a key dies when its bearer session signs out, and when its cookie session signs out', async () => {
    const owner = await ownerWithSite('tk-signout');
    const bearer = await signIn(owner.email);
    const key = await mint(bearer);
    expect(await works(key)).toBe(200);
    expect((await call(hp, 'POST', '/api/v1/account/sign-out', { headers: bearer })).status).toBe(200);
    expect(await works(key)).toBe(401);

    const browser = await browserSignIn(hp, owner.email);
    const cookie = { cookie: browser.cookie, 'x-csrf-token': browser.csrf };
    const browserKey = await mint(cookie);
    expect(await works(browserKey)).toBe(200);
    expect((await call(hp, 'POST', '/api/v1/account/sign-out', { headers: cookie })).status).toBe(200);
    expect(await works(browserKey)).toBe(401);
    // The owner's other session and its key are untouched.
    expect(await works(await mint(owner.bearer))).toBe(200);
  });

  it('a key dies when its session is ended from another session', async () => {
    const owner = await ownerWithSite('tk-end');
    const stolen = await signIn(owner.email);
    const key = await mint(stolen);
    const sessions = await call(hp, 'GET', '/api/v1/account/sessions', { headers: stolen });
    const id = (sessions.body.sessions as Array<{ id: number; current: boolean }>).find((x) => x.current)!.id;
    const ended = await call(hp, 'DELETE', `/api/v1/account/sessions/${id}`, { headers: owner.bearer });
    expect(ended.status).toBe(200);
    expect(await works(key)).toBe(401);
  });

  it('a key dies when its session expires, before any sweep', async () => {
    const owner = await ownerWithSite('tk-expiry');
    const short = await signIn(owner.email);
    const key = await mint(short, owner.siteId);
    expect(await works(key)).toBe(200);
    const token = short.authorization.replace('Bearer ', '');
    await hp.services.store.db.execute(
      sql`update account_sessions set expires_at = now() - interval '1 second'
          where token_hash = ${hashSecret(token)}`,
    );
    expect((await call(hp, 'GET', '/api/v1/account', { headers: short })).status).toBe(401);
    expect(await works(key)).toBe(401);
  });

  it('a password change ends the other sessions’ keys and keeps the caller’s; a reset ends them all', async () => {
    const owner = await ownerWithSite('tk-password');
    const other = await signIn(owner.email);
    const otherKey = await mint(other);
    const callerKey = await mint(owner.bearer);
    const changed = await call(hp, 'POST', '/api/v1/account/password', {
      json: { current_password: PASSWORD, new_password: 'a brand new passphrase' },
      headers: owner.bearer,
    });
    expect(changed.status).toBe(200);
    expect(await works(otherKey)).toBe(401);
    expect(await works(callerKey)).toBe(200);

    const later = await signIn(owner.email, 'a brand new passphrase');
    const laterKey = await mint(later);
    const links: string[] = [];
    const mailing = new Accounts(hp.services.store.db, {
      baseUrl: 'http://localhost:8080',
      mailer: async (_tx, mail) => void links.push(mail.link),
    });
    await mailing.requestReset(owner.email);
    const reset = await call(hp, 'POST', '/api/v1/account/password-reset/confirm', {
      json: { token: tokenOf(links.at(-1)!), password: PASSWORD },
    });
    expect(reset.status).toBe(200);
    expect(await works(callerKey)).toBe(401);
    expect(await works(laterKey)).toBe(401);
  });

  it('an operator’s admin session mints keys bound to it too, and accepting the invitation ends them', async () => {
    // `admin create-site` makes the account (without a password), `admin invite` its link.
    const email = `tk-operator-${tag}@example.com`;
    const { siteId } = await hp.createSite(`tk-operator-${tag}`, { email });
    const invited = await hp.services.platform.accounts.invite({ email });
    const operator = await hp.services.platform.accounts.createSession(email);
    const operatorAuth = { authorization: `Bearer ${operator.token}` };
    const key = await mint(operatorAuth, siteId);
    const keys = await listed(operatorAuth, siteId);
    expect(keys).toHaveLength(1);
    expect(keys[0]!.minted_by).toMatchObject({ kind: 'operator', user_agent: null, current: true });
    const accepted = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(invited.link), password: PASSWORD },
    });
    expect(accepted.status).toBe(200);
    expect(await works(key)).toBe(401);
  });

  it('lists a site’s live temporary keys with who minted them, and revokes one at once', async () => {
    const owner = await ownerWithSite('tk-list');
    const curl = await signIn(owner.email);
    const browser = await browserSignIn(hp, owner.email);
    const cookie = { cookie: browser.cookie, 'x-csrf-token': browser.csrf };
    const curlKey = await mint(curl, owner.siteId);
    const browserKey = await mint(cookie, owner.siteId);
    // Dead keys are not listed: an expired one and one whose session ended.
    const gone = await signIn(owner.email);
    await mint(gone, owner.siteId);
    await call(hp, 'POST', '/api/v1/account/sign-out', { headers: gone });
    const expired = await mint(curl, owner.siteId);
    await hp.services.store.db.execute(
      sql`update api_keys set expires_at = now() - interval '1 second' where key_prefix = ${expired.slice(0, 12)}`,
    );

    const keys = await listed(cookie, owner.siteId);
    expect(keys.map((k) => k.prefix)).toEqual([browserKey.slice(0, 12), curlKey.slice(0, 12)]);
    const [fromBrowser, fromCurl] = keys as [Json, Json];
    expect(Object.keys(fromBrowser).sort()).toEqual(
      ['created_at', 'expires_at', 'id', 'last_used_at', 'minted_by', 'prefix'].sort(),
    );
    expect(fromBrowser.minted_by).toMatchObject({ kind: 'browser', current: true });
    expect(fromCurl.minted_by).toMatchObject({ kind: 'bearer', user_agent: 'curl/8.5.0', current: false });
    expect(Date.parse(fromCurl.expires_at as string)).toBeGreaterThan(Date.now() + 3500_000);
    // The permanent keys' list is unchanged: only permanent keys.
    const permanent = await call(hp, 'GET', `/api/v1/account/sites/${owner.siteId}/keys`, {
      headers: cookie,
    });
    expect(permanent.body.keys).toHaveLength(1);

    const revoked = await call(
      hp,
      'DELETE',
      `/api/v1/account/sites/${owner.siteId}/temporary-keys/${fromCurl.id as number}`,
      { headers: cookie },
    );
    expect(revoked.status).toBe(200);
    expect(await works(curlKey)).toBe(401);
    expect(await works(browserKey)).toBe(200);
    expect((await listed(cookie, owner.siteId)).map((k) => k.id)).toEqual([fromBrowser.id]);
    const again = await call(
      hp,
      'DELETE',
      `/api/v1/account/sites/${owner.siteId}/temporary-keys/${fromCurl.id as number}`,
      { headers: cookie },
    );
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('Not found');
    // A permanent key's id is not a temporary key.
    const permanentId = (permanent.body.keys as Json[])[0]!.id as number;
    const notTemp = await call(
      hp,
      'DELETE',
      `/api/v1/account/sites/${owner.siteId}/temporary-keys/${permanentId}`,
      { headers: cookie },
    );
    expect(notTemp.status).toBe(404);
  });

  it('another account’s site or key is a 404', async () => {
    const victim = await ownerWithSite('tk-victim');
    const attacker = await ownerWithSite('tk-attacker');
    const key = await mint(victim.bearer, victim.siteId);
    const keyId = (await listed(victim.bearer, victim.siteId))[0]!.id as number;
    const list = await call(hp, 'GET', `/api/v1/account/sites/${victim.siteId}/temporary-keys`, {
      headers: attacker.bearer,
    });
    expect(list.status).toBe(404);
    for (const siteId of [victim.siteId, attacker.siteId]) {
      const res = await call(hp, 'DELETE', `/api/v1/account/sites/${siteId}/temporary-keys/${keyId}`, {
        headers: attacker.bearer,
      });
      expect(res.status).toBe(404);
    }
    expect(await works(key)).toBe(200);
  });

  it('a site holds at most MAX_TEMP_KEYS_PER_SITE live temporary keys: the next is 403 LIMIT_REACHED, an expired one frees a place', async () => {
    const owner = await ownerWithSite('tk-cap');
    // Filled in one statement (the cap is what is under test, not a hundred round trips).
    const found = await hp.services.store.db.execute(
      sql`select s.id from account_sessions s join accounts a on a.id = s.account_id where a.email = ${owner.email} limit 1`,
    );
    const [session] = (found as unknown as { rows: Array<{ id: number }> }).rows;
    await hp.services.store.db
      .execute(sql`insert into api_keys (site_id, kind, key_hash, key_prefix, expires_at, session_id)
      select ${owner.siteId}::int, 'temporary', 'cap-' || g, 'hp_temp_cap', now() + interval '1 hour', ${session!.id}::int
      from generate_series(1, ${MAX_TEMP_KEYS_PER_SITE - 1}::int) g`);
    const last = await mint(owner.bearer, owner.siteId);
    const over = await call(hp, 'POST', '/api/keys/generate-temp', {
      json: { storage_folder_id: owner.siteId },
      headers: owner.bearer,
    });
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({ error: 'LIMIT_REACHED', limit: MAX_TEMP_KEYS_PER_SITE });
    expect(String(over.body.message)).toMatch(/revoke/i);
    expect(await works(last)).toBe(200);
    // Expired keys do not count.
    await hp.services.store.db.execute(
      sql`update api_keys set expires_at = now() - interval '1 second' where key_hash = 'cap-1'`,
    );
    expect(await works(await mint(owner.bearer, owner.siteId))).toBe(200);
  });
});
