import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
} from '../../support/hostplane.js';
import { browserSignIn, call, invitedOwner, PASSWORD, tokenOf } from '../../support/account-api.js';
import { Accounts } from '../../../src/platform/accounts.js';

describe.each(backends)('account sign-in and sessions on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  it('accepts an invitation once: the password is set, the account signs in and is verified', async () => {
    const email = `invited-${tag}@example.com`;
    const invited = await hp.services.platform.accounts.invite({ email, plan: 'standard' });
    expect(invited.link).toMatch(/^http:\/\/localhost:8080\/console\/invite#token=hp_invite_/);
    expect(invited.mailed).toBe(false);
    const weak = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(invited.link), password: 'password' },
    });
    expect(weak.status).toBe(400);
    expect(weak.body.error).toBe('PASSWORD_TOO_COMMON');
    const accepted = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(invited.link), password: PASSWORD },
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ success: true, session: 'bearer' });
    const again = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(invited.link), password: PASSWORD },
    });
    expect(again.status).toBe(401);
    expect(again.body.error).toBe('INVALID_TOKEN');
    const me = await call(hp, 'GET', '/api/v1/account', {
      headers: { authorization: `Bearer ${accepted.body.token as string}` },
    });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      email,
      email_verified: true,
      plan: { type: 'standard' },
      upgrade_url: 'http://localhost:8080/console/plans',
      signup: 'invite',
    });
    expect(me.body.usage.forms).toEqual({ used: 0, limit: 10 });
    expect(me.body.usage.sqlite_databases).toEqual({ used: 0, limit: 5 });
    expect(me.body.csrf_token).toBeUndefined();
    // Once a password is set, a new invitation is refused: the owner resets it instead.
    await expect(hp.services.platform.accounts.invite({ email })).rejects.toMatchObject({
      code: 'ACCOUNT_EXISTS',
    });
  });

  it('answers a wrong password and an unknown email alike, in comparable time', async () => {
    const { email } = await invitedOwner(hp, `timing-${tag}@example.com`);
    const timed = async (who: string) => {
      const started = performance.now();
      const res = await call(hp, 'POST', '/api/v1/account/sign-in', {
        json: { email: who, password: 'wrong password 1' },
      });
      return { res, ms: performance.now() - started };
    };
    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await timed(email);
      const b = await timed(`nobody-${i}-${tag}@example.com`);
      expect(a.res.status).toBe(401);
      expect(b.res.body).toEqual(a.res.body);
      wrong.push(a.ms);
      unknown.push(b.ms);
    }
    const median = (xs: number[]) => xs.sort((x, y) => x - y)[1]!;
    // Both hash (argon2id, ~19 MiB): neither answers in a fraction of the other's time.
    expect(median(unknown)).toBeGreaterThan(median(wrong) / 3);
    expect(median(wrong)).toBeGreaterThan(median(unknown) / 3);
    const body = (await timed(email)).res.body;
    expect(body.error).toBe('INVALID_CREDENTIALS');
  });

  it('sets an HttpOnly SameSite=Lax cookie (hp_session over http) and refuses cookie writes without the CSRF token', async () => {
    const { email } = await invitedOwner(hp, `cookie-${tag}@example.com`);
    const session = await browserSignIn(hp, email);
    expect(session.setCookie).toMatch(/^hp_session=hp_sess_[\w-]+;/);
    expect(session.setCookie).toMatch(/HttpOnly/);
    expect(session.setCookie).toMatch(/SameSite=Lax/);
    expect(session.setCookie).toMatch(/Path=\//);
    expect(session.setCookie).not.toMatch(/Secure|Domain=/);
    const me = await call(hp, 'GET', '/api/v1/account', { headers: { cookie: session.cookie } });
    expect(me.status).toBe(200);
    expect(me.body.csrf_token).toBe(session.csrf);

    const create = (headers: Record<string, string>) =>
      call(hp, 'POST', '/api/v1/account/sites', {
        json: { slug: `csrf-${tag}` },
        headers: { cookie: session.cookie, ...headers },
      });
    const missing = await create({});
    expect(missing.status).toBe(403);
    expect(missing.body.error).toBe('CSRF_REJECTED');
    const wrong = await create({
      'x-csrf-token': session.csrf.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
    });
    expect(wrong.status).toBe(403);
    const foreign = await create({ 'x-csrf-token': session.csrf, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error).toBe('CSRF_REJECTED');
    // A cookie write of the public API is checked too (the files API accepts sessions).
    const upload = await call(hp, 'POST', '/api/v1/files/upload', {
      json: { path: 'a.txt', content: 'x' },
      headers: { cookie: session.cookie },
    });
    expect(upload.status).toBe(403);
    const ok = await create({ 'x-csrf-token': session.csrf, origin: 'http://localhost:8080' });
    expect(ok.status).toBe(201);
    // A bearer session needs no CSRF token (no ambient credential).
    const reads = await call(hp, 'GET', '/api/v1/files/list', { headers: { cookie: session.cookie } });
    expect(reads.status).toBe(200);
  });

  it('gives a new session id at every sign-in and ends the one the browser held (no fixation)', async () => {
    const { email } = await invitedOwner(hp, `fixation-${tag}@example.com`);
    const first = await browserSignIn(hp, email);
    const second = await browserSignIn(hp, email, { cookie: first.cookie });
    expect(second.value).not.toBe(first.value);
    expect((await call(hp, 'GET', '/api/v1/account', { headers: { cookie: first.cookie } })).status).toBe(
      401,
    );
    expect((await call(hp, 'GET', '/api/v1/account', { headers: { cookie: second.cookie } })).status).toBe(
      200,
    );
    // Another site cannot start a browser session (login CSRF): its Origin is refused.
    const crossSite = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: { email, password: PASSWORD, session: 'cookie' },
      headers: { origin: 'https://evil.example' },
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body.error).toBe('CSRF_REJECTED');
    expect(crossSite.headers.get('set-cookie')).toBeNull();
    // A value planted by someone else is never adopted: sign-in makes its own.
    const planted = 'hp_session=hp_sess_plantedByAnAttacker0000000000000000000';
    const third = await browserSignIn(hp, email, { cookie: planted });
    expect(third.cookie).not.toBe(planted);
    expect((await call(hp, 'GET', '/api/v1/account', { headers: { cookie: planted } })).status).toBe(401);
    // A bearer token is no cookie, and a cookie no bearer token.
    const asBearer = await call(hp, 'GET', '/api/v1/account', {
      headers: { authorization: `Bearer ${third.value}` },
    });
    expect(asBearer.status).toBe(401);
  });

  it('lets no other origin sign in (either mode) or end the browser’s session, nor accept an invitation', async () => {
    const victim = await invitedOwner(hp, `victim-${tag}@example.com`);
    const attacker = await invitedOwner(hp, `attacker-${tag}@example.com`);
    const browser = await browserSignIn(hp, victim.email);
    const signedIn = async () =>
      (await call(hp, 'GET', '/api/v1/account', { headers: { cookie: browser.cookie } })).status;
    const attempt = { email: attacker.email, password: PASSWORD, session: 'bearer' };
    // A same-site page's simple (preflight-free) POST: text/plain is refused before anything runs.
    const simple = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: attempt,
      headers: { cookie: browser.cookie, origin: 'http://evil.localhost:8080', 'content-type': 'text/plain' },
    });
    expect(simple.status).toBe(415);
    expect(simple.body).toMatchObject({ error: 'Unsupported Media Type' });
    expect(typeof simple.body.message).toBe('string');
    const foreign = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: attempt,
      headers: { cookie: browser.cookie, origin: 'http://evil.localhost:8080' },
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error).toBe('CSRF_REJECTED');
    // A bearer sign-in leaves the cookie session alone: only a cookie sign-in replaces it.
    const cli = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: attempt,
      headers: { cookie: browser.cookie },
    });
    expect(cli.status).toBe(200);
    expect(await signedIn()).toBe(200);

    // An invitation is not spent by a refused attempt.
    const invited = await hp.services.platform.accounts.invite({ email: `csrf-invite-${tag}@example.com` });
    const fromElsewhere = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(invited.link), password: PASSWORD },
      headers: { origin: 'http://evil.localhost:8080' },
    });
    expect(fromElsewhere.status).toBe(403);
    expect(fromElsewhere.body.error).toBe('CSRF_REJECTED');
    const accepted = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(invited.link), password: PASSWORD },
      headers: { origin: 'http://localhost:8080' },
    });
    expect(accepted.status).toBe(200);
  });

  it('lists and ends sessions, signs out, and a password change ends every other session', async () => {
    const owner = await invitedOwner(hp, `sessions-${tag}@example.com`);
    const browser = await browserSignIn(hp, owner.email);
    const list = await call(hp, 'GET', '/api/v1/account/sessions', { headers: owner.bearer });
    expect(list.status).toBe(200);
    const sessions = list.body.sessions as Array<{ id: number; kind: string; current: boolean }>;
    expect(sessions.map((x) => x.kind).sort()).toEqual(['bearer', 'browser']);
    expect(sessions.filter((x) => x.current)).toHaveLength(1);
    const other = sessions.find((x) => !x.current)!;
    const ended = await call(hp, 'DELETE', `/api/v1/account/sessions/${other.id}`, { headers: owner.bearer });
    expect(ended.status).toBe(200);
    expect((await call(hp, 'GET', '/api/v1/account', { headers: { cookie: browser.cookie } })).status).toBe(
      401,
    );
    expect(
      (await call(hp, 'DELETE', `/api/v1/account/sessions/${other.id}`, { headers: owner.bearer })).status,
    ).toBe(404);

    const keeper = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: { email: owner.email, password: PASSWORD },
    });
    const keeperAuth = { authorization: `Bearer ${keeper.body.token as string}` };
    const wrong = await call(hp, 'POST', '/api/v1/account/password', {
      json: { current_password: 'not it at all', new_password: 'a brand new passphrase' },
      headers: keeperAuth,
    });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error).toBe('WRONG_PASSWORD');
    const changed = await call(hp, 'POST', '/api/v1/account/password', {
      json: { current_password: PASSWORD, new_password: 'a brand new passphrase' },
      headers: keeperAuth,
    });
    expect(changed.status).toBe(200);
    expect((await call(hp, 'GET', '/api/v1/account', { headers: owner.bearer })).status).toBe(401);
    expect((await call(hp, 'GET', '/api/v1/account', { headers: keeperAuth })).status).toBe(200);
    const old = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: { email: owner.email, password: PASSWORD },
    });
    expect(old.status).toBe(401);

    const out = await call(hp, 'POST', '/api/v1/account/sign-out', { headers: keeperAuth });
    expect(out.status).toBe(200);
    expect((await call(hp, 'GET', '/api/v1/account', { headers: keeperAuth })).status).toBe(401);
  });

  it('resets a password with a single-use token that ends every session', async () => {
    const owner = await invitedOwner(hp, `reset-${tag}@example.com`);
    const asked = await call(hp, 'POST', '/api/v1/account/password-reset', { json: { email: owner.email } });
    const unknown = await call(hp, 'POST', '/api/v1/account/password-reset', {
      json: { email: `ghost-${tag}@example.com` },
    });
    expect(asked.status).toBe(202);
    expect(unknown.body).toEqual(asked.body);
    // No SMTP here: the token is taken from the platform (the mail test reads it from Mailpit).
    const accounts = hp.services.platform.accounts;
    const link = accounts.linkFor('reset', 'x');
    expect(link).toBe('http://localhost:8080/console/reset#token=x');
    await accounts.requestReset(owner.email);
    const { rows } = (await hp.services.store.db.execute(
      sql`select count(*)::int as n from account_tokens where kind = 'reset' and used_at is null`,
    )) as unknown as { rows: Array<{ n: number }> };
    expect(rows[0]!.n).toBe(1); // asking again retires the earlier link
    const bad = await call(hp, 'POST', '/api/v1/account/password-reset/confirm', {
      json: { token: `hp_reset_${'A'.repeat(43)}`, password: 'another fine passphrase' },
    });
    expect(bad.status).toBe(401);
    expect(bad.body.error).toBe('INVALID_TOKEN');
  });

  it('voids an invitation once a password is set by a reset, and ends earlier sessions on accept', async () => {
    const email = `invite-reset-${tag}@example.com`;
    const links: string[] = [];
    // The same database, with a mailer that keeps the links (no SMTP in this server).
    const mailing = new Accounts(hp.services.store.db, {
      baseUrl: 'http://localhost:8080',
      mailer: async (_tx, mail) => void links.push(mail.link),
    });
    const invited = await mailing.invite({ email });
    await mailing.requestReset(email);
    const reset = await call(hp, 'POST', '/api/v1/account/password-reset/confirm', {
      json: { token: tokenOf(links.at(-1)!), password: PASSWORD },
    });
    expect(reset.status).toBe(200);
    const late = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(invited.link), password: 'an attacker chose this one' },
    });
    expect(late.status).toBe(401);
    expect(late.body.error).toBe('INVALID_TOKEN');
    expect(
      (await call(hp, 'POST', '/api/v1/account/sign-in', { json: { email, password: PASSWORD } })).status,
    ).toBe(200);

    // An operator's session made before the owner accepted ends when they do.
    const other = `invite-session-${tag}@example.com`;
    const second = await hp.services.platform.accounts.invite({ email: other });
    const operator = await hp.services.platform.accounts.createSession(other);
    const operatorAuth = { authorization: `Bearer ${operator.token}` };
    expect((await call(hp, 'GET', '/api/v1/account', { headers: operatorAuth })).status).toBe(200);
    const accepted = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(second.link), password: PASSWORD },
    });
    expect(accepted.status).toBe(200);
    expect((await call(hp, 'GET', '/api/v1/account', { headers: operatorAuth })).status).toBe(401);
  });

  it('refuses open sign-up when sign-up is by invitation', async () => {
    const res = await call(hp, 'POST', '/api/v1/account/sign-up', {
      json: { email: `x-${tag}@example.com`, password: PASSWORD },
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('SIGNUP_CLOSED');
  });

  it('rate-limits sign-in per email', async () => {
    const email = `limited-${tag}@example.com`;
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++)
      statuses.push(
        (await call(hp, 'POST', '/api/v1/account/sign-in', { json: { email, password: 'wrong guess 123' } }))
          .status,
      );
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(statuses[10]).toBe(429);
    const metrics = await scrapeMetrics(hp);
    expect(
      metricValue(metrics, 'hostplane_account_sign_ins_total', { result: 'limited', session: 'bearer' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      metricValue(metrics, 'hostplane_account_sign_ins_total', { result: 'invalid', session: 'bearer' }),
    ).toBeGreaterThanOrEqual(10);
  });
});
