import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
} from '../../support/hostplane.js';
import { browserSignIn, call, invitedOwner, PASSWORD } from '../../support/account-api.js';
import { enableTotp, totpCode, wrongCode } from '../../support/totp.js';
import { hashSecret } from '../../../src/platform/secrets.js';

// Sudo mode (issue 28): deleting a site and creating a permanent key need the password (or a TOTP
// code) proven in the session within the last 15 minutes (docs/developers/security.md "Sudo mode").
describe.each(backends)('sudo mode on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  const newSite = async (auth: Record<string, string>, slug: string) => {
    const res = await call(hp, 'POST', '/api/v1/account/sites', { json: { slug }, headers: auth });
    expect(res.status).toBe(201);
    return res.body.site.id as number;
  };
  /** Moves the session's last confirmation back by `minutes` (the token's or the cookie's). */
  const age = async (token: string, minutes = 16) => {
    await hp.services.store.db.execute(
      sql`update account_sessions set confirmed_at = now() - make_interval(mins => ${minutes})
          where token_hash = ${hashSecret(token)}`,
    );
  };
  const bearerToken = (auth: Record<string, string>) => auth.authorization!.replace('Bearer ', '');
  const createKey = (auth: Record<string, string>, siteId: number) =>
    call(hp, 'POST', `/api/v1/account/sites/${siteId}/keys`, { headers: auth });
  const deleteSite = (auth: Record<string, string>, siteId: number) =>
    call(hp, 'DELETE', `/api/v1/account/sites/${siteId}`, { headers: auth });
  const sudo = (auth: Record<string, string>, json: unknown) =>
    call(hp, 'POST', '/api/v1/account/sudo', { json, headers: auth });

  it('a fresh sign-in may delete a site and create a key; an aged one gets 403 SUDO_REQUIRED until /sudo', async () => {
    const owner = await invitedOwner(hp, `sudo-${tag}@example.com`);
    const siteId = await newSite(owner.bearer, `sudo-a-${tag}`);
    const doomed = await newSite(owner.bearer, `sudo-b-${tag}`);
    expect((await createKey(owner.bearer, siteId)).status).toBe(201);
    expect((await deleteSite(owner.bearer, doomed)).status).toBe(200);

    await age(bearerToken(owner.bearer), 16);
    const refused = await createKey(owner.bearer, siteId);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('SUDO_REQUIRED');
    expect(refused.body.message).toMatch(/confirm your password/i);
    const notDeleted = await deleteSite(owner.bearer, siteId);
    expect(notDeleted.status).toBe(403);
    expect(notDeleted.body.error).toBe('SUDO_REQUIRED');
    expect((await call(hp, 'GET', `/api/v1/account/sites/${siteId}`, { headers: owner.bearer })).status).toBe(
      200,
    );
    // Other account routes do not need it.
    expect(
      (await call(hp, 'GET', `/api/v1/account/sites/${siteId}/keys`, { headers: owner.bearer })).status,
    ).toBe(200);
    // Another account's site stays a 404 (nothing said about it).
    const stranger = await invitedOwner(hp, `sudo-stranger-${tag}@example.com`);
    expect((await deleteSite(stranger.bearer, siteId)).status).toBe(404);

    const wrong = await sudo(owner.bearer, { password: 'not my password at all' });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error).toBe('WRONG_PASSWORD');
    expect((await createKey(owner.bearer, siteId)).status).toBe(403);
    const confirmed = await sudo(owner.bearer, { password: PASSWORD });
    expect(confirmed.status).toBe(200);
    const until = Date.parse(confirmed.body.sudo_until as string);
    expect(until).toBeGreaterThan(Date.now() + 14 * 60_000);
    expect(until).toBeLessThan(Date.now() + 16 * 60_000);
    expect((await createKey(owner.bearer, siteId)).status).toBe(201);
    expect((await deleteSite(owner.bearer, siteId)).status).toBe(200);
    const metrics = await scrapeMetrics(hp);
    for (const result of ['required', 'confirmed', 'failed'])
      expect(metricValue(metrics, 'hostplane_account_sudo_total', { result })).toBeGreaterThanOrEqual(1);
  });

  it('a session from before sudo mode (never confirmed) must confirm; another session’s confirmation is not its own', async () => {
    const owner = await invitedOwner(hp, `sudo-null-${tag}@example.com`);
    const siteId = await newSite(owner.bearer, `sudo-null-${tag}`);
    await hp.services.store.db.execute(
      sql`update account_sessions set confirmed_at = null where token_hash = ${hashSecret(bearerToken(owner.bearer))}`,
    );
    expect((await createKey(owner.bearer, siteId)).body.error).toBe('SUDO_REQUIRED');
    const browser = await browserSignIn(hp, owner.email);
    const cookie = { cookie: browser.cookie, 'x-csrf-token': browser.csrf };
    await age(browser.value);
    expect((await createKey(cookie, siteId)).body.error).toBe('SUDO_REQUIRED');
    expect((await sudo(cookie, { password: PASSWORD })).status).toBe(200);
    expect((await createKey(cookie, siteId)).status).toBe(201);
    expect((await createKey(owner.bearer, siteId)).body.error).toBe('SUDO_REQUIRED');
  });

  it('counts wrong passwords against the account’s password limit (429 beyond it)', async () => {
    const owner = await invitedOwner(hp, `sudo-limit-${tag}@example.com`);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++)
      statuses.push((await sudo(owner.bearer, { password: `wrong guess ${i}` })).status);
    expect(statuses.every((s) => s === 403)).toBe(true);
    const limited = await sudo(owner.bearer, { password: PASSWORD });
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('Too Many Requests');
    // The same count as a password change of the account.
    const change = await call(hp, 'POST', '/api/v1/account/password', {
      json: { current_password: PASSWORD, new_password: 'a brand new passphrase' },
      headers: owner.bearer,
    });
    expect(change.status).toBe(429);
  });

  it('accepts a current TOTP code when two-factor sign-in is on (once), and refuses a code when it is off', async () => {
    const owner = await invitedOwner(hp, `sudo-totp-${tag}@example.com`);
    const siteId = await newSite(owner.bearer, `sudo-totp-${tag}`);
    const off = await sudo(owner.bearer, { code: '123456' });
    expect(off.status).toBe(409);
    expect(off.body.error).toBe('TOTP_NOT_ENABLED');
    const { secret, recoveryCodes } = await enableTotp(hp, owner.bearer); // uses the current step
    await age(bearerToken(owner.bearer));
    const wrong = await sudo(owner.bearer, { code: wrongCode(secret) });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error).toBe('INVALID_TOTP_CODE');
    const next = totpCode(secret, 1);
    expect((await sudo(owner.bearer, { code: next })).status).toBe(200);
    expect((await createKey(owner.bearer, siteId)).status).toBe(201);
    await age(bearerToken(owner.bearer));
    const replayed = await sudo(owner.bearer, { code: next });
    expect(replayed.body.error).toBe('INVALID_TOTP_CODE');
    const both = await sudo(owner.bearer, { password: PASSWORD, code: next });
    expect(both.status).toBe(400);
    const neither = await sudo(owner.bearer, {});
    expect(neither.status).toBe(400);
    // Turning TOTP off asks for the password and a code itself: its own confirmation.
    await age(bearerToken(owner.bearer));
    const disabled = await call(hp, 'POST', '/api/v1/account/totp/disable', {
      json: { password: PASSWORD, recovery_code: recoveryCodes[0] },
      headers: owner.bearer,
    });
    expect(disabled.status).toBe(200);
  });

  it('an operator’s admin session needs no confirmation', async () => {
    const email = `sudo-operator-${tag}@example.com`;
    const { siteId } = await hp.createSite(`sudo-op-${tag}`, { email });
    const operator = await hp.services.platform.accounts.createSession(email);
    const auth = { authorization: `Bearer ${operator.token}` };
    await age(operator.token, 600);
    expect((await createKey(auth, siteId)).status).toBe(201);
    expect((await deleteSite(auth, siteId)).status).toBe(200);
  });
});
