import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { createDatabase } from '../../support/postgres.js';
import { browserSignIn, call, invitedOwner, PASSWORD } from '../../support/account-api.js';
import { enableTotp, totpCode } from '../../support/totp.js';

describe('the account API on two replicas sharing one PostgreSQL', () => {
  let a: TestHostplane;
  let b: TestHostplane;
  beforeAll(async () => {
    const databaseUrl = await createDatabase(inject('postgresUrl'));
    a = await startHostplane('postgres+s3', {
      env: { DATABASE_URL: databaseUrl, HOSTPLANE_SQLITE_SHARD_NAME: 'acct-a' },
    });
    b = await startHostplane('postgres+s3', {
      env: { DATABASE_URL: databaseUrl, HOSTPLANE_SQLITE_SHARD_NAME: 'acct-b' },
    });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('a key revoked on one replica no longer works on the other', async () => {
    const owner = await invitedOwner(a, 'replicas-keys@example.com');
    const created = await call(a, 'POST', '/api/v1/account/sites', {
      json: { slug: 'replica-keys' },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    const siteId = created.body.site.id as number;
    const made = await call(a, 'POST', `/api/v1/account/sites/${siteId}/keys`, { headers: owner.bearer });
    const key = { 'x-api-key': made.body.api_key as string };
    expect((await call(b, 'GET', '/api/v1/files/list', { headers: key, port: b.port })).status).toBe(200);
    const revoked = await call(
      a,
      'DELETE',
      `/api/v1/account/sites/${siteId}/keys/${made.body.key.id as number}`,
      {
        headers: owner.bearer,
      },
    );
    expect(revoked.status).toBe(200);
    expect((await call(b, 'GET', '/api/v1/files/list', { headers: key, port: b.port })).status).toBe(401);
    expect((await call(b, 'GET', '/api/v1/hosting-info', { headers: key, port: b.port })).status).toBe(401);
  });

  it('a session made on one replica works on the other, and ends there at once', async () => {
    const owner = await invitedOwner(a, 'replicas-sessions@example.com');
    const browser = await browserSignIn(a, owner.email);
    expect(
      (await call(b, 'GET', '/api/v1/account', { headers: { cookie: browser.cookie }, port: b.port })).status,
    ).toBe(200);
    const out = await call(a, 'POST', '/api/v1/account/sign-out', {
      headers: { cookie: browser.cookie, 'x-csrf-token': browser.csrf },
    });
    expect(out.status).toBe(200);
    expect(
      (await call(b, 'GET', '/api/v1/account', { headers: { cookie: browser.cookie }, port: b.port })).status,
    ).toBe(401);
  });

  it('a temporary key dies on every replica with its session, ended on the other', async () => {
    const owner = await invitedOwner(a, 'replicas-tempkeys@example.com');
    const created = await call(a, 'POST', '/api/v1/account/sites', {
      json: { slug: 'replica-tempkeys' },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    const browser = await browserSignIn(a, owner.email);
    const cookie = { cookie: browser.cookie, 'x-csrf-token': browser.csrf };
    const minted = await call(a, 'POST', '/api/keys/generate-temp', { json: {}, headers: cookie });
    const key = { 'x-api-key': minted.body.temp_api_key as string };
    expect((await call(a, 'GET', '/api/v1/hosting-info', { headers: key })).status).toBe(200);
    expect((await call(b, 'GET', '/api/v1/hosting-info', { headers: key, port: b.port })).status).toBe(200);
    const out = await call(b, 'POST', '/api/v1/account/sign-out', { headers: cookie, port: b.port });
    expect(out.status).toBe(200);
    expect((await call(a, 'GET', '/api/v1/hosting-info', { headers: key })).status).toBe(401);
    expect((await call(b, 'GET', '/api/v1/hosting-info', { headers: key, port: b.port })).status).toBe(401);
  });

  it('sudo mode confirmed on one replica holds on the other', async () => {
    const owner = await invitedOwner(a, 'replicas-sudo@example.com');
    const created = await call(a, 'POST', '/api/v1/account/sites', {
      json: { slug: 'replica-sudo' },
      headers: owner.bearer,
    });
    const siteId = created.body.site.id as number;
    await a.services.store.db.execute(
      sql`update account_sessions set confirmed_at = now() - interval '1 hour' where account_id =
          (select account_id from sites where id = ${siteId})`,
    );
    const refused = await call(b, 'POST', `/api/v1/account/sites/${siteId}/keys`, {
      headers: owner.bearer,
      port: b.port,
    });
    expect(refused.body.error).toBe('SUDO_REQUIRED');
    const sudo = await call(a, 'POST', '/api/v1/account/sudo', {
      json: { password: PASSWORD },
      headers: owner.bearer,
    });
    expect(sudo.status).toBe(200);
    const made = await call(b, 'POST', `/api/v1/account/sites/${siteId}/keys`, {
      headers: owner.bearer,
      port: b.port,
    });
    expect(made.status).toBe(201);
  });

  it('finishes a two-factor sign-in on the other replica, and refuses its code there again', async () => {
    const owner = await invitedOwner(a, 'replicas-totp@example.com');
    const { secret } = await enableTotp(a, owner.bearer);
    const first = await call(a, 'POST', '/api/v1/account/sign-in', {
      json: { email: owner.email, password: PASSWORD, session: 'cookie' },
    });
    const challenge = first.body.challenge as string;
    const code = totpCode(secret, 1);
    const done = await call(b, 'POST', '/api/v1/account/sign-in/totp', {
      json: { challenge, code },
      port: b.port,
    });
    expect(done.status).toBe(200);
    const cookie = (done.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect((await call(a, 'GET', '/api/v1/account', { headers: { cookie } })).status).toBe(200);
    // The same code on a new challenge, on the first replica: its time step is used.
    const again = await call(a, 'POST', '/api/v1/account/sign-in', {
      json: { email: owner.email, password: PASSWORD },
    });
    const replay = await call(a, 'POST', '/api/v1/account/sign-in/totp', {
      json: { challenge: again.body.challenge as string, code },
    });
    expect(replay.body.error).toBe('INVALID_TOTP_CODE');
  });

  it('counts sign-in attempts per email across both replicas', async () => {
    const email = 'replicas-limit@example.com';
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const hp = i % 2 === 0 ? a : b;
      const res = await call(hp, 'POST', '/api/v1/account/sign-in', {
        json: { email, password: 'a wrong guess 77' },
        port: hp.port,
      });
      statuses.push(res.status);
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses[10]).toBe(429);
  });

  it('counts attempts per client address across both replicas', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      const hp = i % 2 === 0 ? a : b;
      const res = await call(hp, 'POST', '/api/v1/account/password-reset', {
        json: { email: `someone-${i}@example.com` },
        headers: { 'x-forwarded-for': '192.0.2.77' },
        port: hp.port,
      });
      statuses.push(res.status);
    }
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(202));
    expect(statuses[20]).toBe(429);
    const limited = await call(b, 'POST', '/api/v1/account/sign-in', {
      json: { email: 'fresh@example.com', password: 'whatever it is' },
      headers: { 'x-forwarded-for': '192.0.2.77' },
      port: b.port,
    });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
