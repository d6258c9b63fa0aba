import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { call, invitedOwner, PASSWORD } from '../../support/account-api.js';
import { enableTotp, totpCode, wrongCode } from '../../support/totp.js';

describe.each(backends)('two-factor sign-in (TOTP) on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  const signIn = (email: string, session: 'bearer' | 'cookie' = 'bearer') =>
    call(hp, 'POST', '/api/v1/account/sign-in', { json: { email, password: PASSWORD, session } });
  const secondStep = (json: Record<string, string>) =>
    call(hp, 'POST', '/api/v1/account/sign-in/totp', { json });

  it('sets up with the password, turns on with a code, then asks every sign-in for a code used once', async () => {
    const owner = await invitedOwner(hp, `totp-${tag}@example.com`);
    const wrongPassword = await call(hp, 'POST', '/api/v1/account/totp/setup', {
      json: { password: 'not my password' },
      headers: owner.bearer,
    });
    expect(wrongPassword.status).toBe(403);
    expect(wrongPassword.body.error).toBe('WRONG_PASSWORD');
    const notYet = await call(hp, 'POST', '/api/v1/account/totp/confirm', {
      json: { code: '123456' },
      headers: owner.bearer,
    });
    expect(notYet.body.error).toBe('TOTP_NOT_ENABLED');

    const setup = await call(hp, 'POST', '/api/v1/account/totp/setup', {
      json: { password: PASSWORD },
      headers: owner.bearer,
    });
    expect(setup.status).toBe(200);
    const secret = setup.body.secret as string;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(setup.body.otpauth_uri).toMatch(/^otpauth:\/\/totp\/Hostplane:totp-/);
    // Set up but not confirmed: sign-in still answers a session.
    expect((await signIn(owner.email)).body.session).toBe('bearer');
    const wrong = await call(hp, 'POST', '/api/v1/account/totp/confirm', {
      json: { code: wrongCode(secret) },
      headers: owner.bearer,
    });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error).toBe('INVALID_TOTP_CODE');
    const confirmed = await call(hp, 'POST', '/api/v1/account/totp/confirm', {
      json: { code: totpCode(secret) },
      headers: owner.bearer,
    });
    expect(confirmed.status).toBe(200);
    const codes = confirmed.body.recovery_codes as string[];
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);

    // At rest: the secret encrypted, the recovery codes hashed.
    const { rows } = (await hp.services.store.db.execute(
      sql`select t.secret_encrypted, (select string_agg(code_hash, ',') from account_recovery_codes r where r.account_id = t.account_id) as hashes
          from account_totp t join accounts a on a.id = t.account_id where a.email = ${owner.email}`,
    )) as unknown as { rows: Array<{ secret_encrypted: string; hashes: string }> };
    expect(rows[0]!.secret_encrypted).toMatch(/^v1\./);
    expect(rows[0]!.secret_encrypted).not.toContain(secret);
    for (const code of codes) expect(rows[0]!.hashes).not.toContain(code);

    const first = await signIn(owner.email);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, second_factor: 'totp' });
    expect(first.body.token).toBeUndefined();
    const challenge = first.body.challenge as string;
    // The code that turned TOTP on was used: its time step is refused again (replay).
    const replay = await secondStep({ challenge, code: totpCode(secret) });
    expect(replay.status).toBe(403);
    expect(replay.body.error).toBe('INVALID_TOTP_CODE');
    const both = await secondStep({ challenge, code: '123456', recovery_code: codes[0]! });
    expect(both.status).toBe(400);
    const next = await secondStep({ challenge, code: totpCode(secret, 1) });
    expect(next.status).toBe(200);
    expect(next.body.session).toBe('bearer');
    const me = await call(hp, 'GET', '/api/v1/account', {
      headers: { authorization: `Bearer ${next.body.token as string}` },
    });
    expect(me.status).toBe(200);
    // The challenge is used.
    const again = await secondStep({ challenge, code: totpCode(secret, 1) });
    expect(again.status).toBe(401);
    expect(again.body.error).toBe('INVALID_CHALLENGE');

    // A recovery code works once.
    const second = (await signIn(owner.email)).body.challenge as string;
    expect((await secondStep({ challenge: second, recovery_code: codes[0]!.toUpperCase() })).status).toBe(
      200,
    );
    const third = (await signIn(owner.email)).body.challenge as string;
    const reused = await secondStep({ challenge: third, recovery_code: codes[0]! });
    expect(reused.status).toBe(403);
    expect(reused.body.error).toBe('INVALID_TOTP_CODE');
    expect((await secondStep({ challenge: third, recovery_code: codes[1]! })).status).toBe(200);
    const status = await call(hp, 'GET', '/api/v1/account/totp', { headers: owner.bearer });
    expect(status.body).toEqual({ success: true, enabled: true, recovery_codes_left: 8 });
  });

  it('makes new recovery codes (the earlier ones stop working) and turns off with the password and a code', async () => {
    const owner = await invitedOwner(hp, `totp-off-${tag}@example.com`);
    const { recoveryCodes: codes } = await enableTotp(hp, owner.bearer);
    const regenerated = await call(hp, 'POST', '/api/v1/account/totp/recovery-codes', {
      json: { password: PASSWORD, recovery_code: codes[2]! },
      headers: owner.bearer,
    });
    expect(regenerated.status).toBe(200);
    const fresh = regenerated.body.recovery_codes as string[];
    const fourth = (await signIn(owner.email)).body.challenge as string;
    expect((await secondStep({ challenge: fourth, recovery_code: codes[3]! })).status).toBe(403);

    // Off: needs the password and a code; then sign-in answers a session again.
    const noPassword = await call(hp, 'POST', '/api/v1/account/totp/disable', {
      json: { password: 'wrong one', recovery_code: fresh[0]! },
      headers: owner.bearer,
    });
    expect(noPassword.body.error).toBe('WRONG_PASSWORD');
    const off = await call(hp, 'POST', '/api/v1/account/totp/disable', {
      json: { password: PASSWORD, recovery_code: fresh[0]! },
      headers: owner.bearer,
    });
    expect(off.status).toBe(200);
    expect((await signIn(owner.email)).body.session).toBe('bearer');
    const offAgain = await call(hp, 'POST', '/api/v1/account/totp/disable', {
      json: { password: PASSWORD, code: '123456' },
      headers: owner.bearer,
    });
    expect(offAgain.body.error).toBe('TOTP_NOT_ENABLED');
  });

  it('voids a challenge after five wrong codes, and sets the cookie when the first step asked for one', async () => {
    const owner = await invitedOwner(hp, `totp-cookie-${tag}@example.com`);
    const { secret, recoveryCodes } = await enableTotp(hp, owner.bearer);
    const challenge = (await signIn(owner.email, 'cookie')).body.challenge as string;
    for (let i = 0; i < 5; i++)
      expect((await secondStep({ challenge, code: wrongCode(secret) })).body.error).toBe('INVALID_TOTP_CODE');
    const late = await secondStep({ challenge, recovery_code: recoveryCodes[0]! });
    expect(late.status).toBe(401);
    expect(late.body.error).toBe('INVALID_CHALLENGE');
    const other = (await signIn(owner.email, 'cookie')).body.challenge as string;
    const done = await secondStep({ challenge: other, recovery_code: recoveryCodes[0]! });
    expect(done.status).toBe(200);
    expect(done.body.session).toBe('cookie');
    expect(done.headers.get('set-cookie')).toMatch(/hp_session=/);
    expect(done.body.csrf_token).toEqual(expect.any(String));
  });

  it('rate-limits second-factor attempts per account, whatever the challenge', async () => {
    const owner = await invitedOwner(hp, `totp-limit-${tag}@example.com`);
    const { secret } = await enableTotp(hp, owner.bearer); // two attempts counted (setup, confirm)
    let challenge = (await signIn(owner.email)).body.challenge as string;
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) {
      if (i === 4) challenge = (await signIn(owner.email)).body.challenge as string;
      statuses.push((await secondStep({ challenge, code: wrongCode(secret) })).status);
    }
    expect(statuses.slice(0, 8)).toEqual(Array(8).fill(403));
    expect(statuses[8]).toBe(429);
    // The right code is refused too while the limit holds.
    const right = await secondStep({ challenge, code: totpCode(secret, 1) });
    expect(right.status).toBe(429);
    expect(right.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});
