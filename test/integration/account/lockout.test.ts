import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
} from '../../support/hostplane.js';
import { browserSignIn, call, invitedOwner, PASSWORD, type Answer } from '../../support/account-api.js';

// Lockout as a weapon (docs/developers/security.md "Sign-in attempts and lockout"): only failures count against an
// email's budget, and a browser that signed in to the account before (its device cookie) keeps
// its own budget while the address is under attack.

const signIn = (hp: TestHostplane, email: string, password: string, cookie?: string) =>
  call(hp, 'POST', '/api/v1/account/sign-in', {
    json: { email, password, session: 'cookie' },
    headers: cookie ? { cookie } : {},
  });

/** The `name=value` pair of the device cookie an answer sets. */
const deviceCookieOf = (answer: Answer): string => {
  const set = answer.headers.getSetCookie().find((c) => c.startsWith('hp_device='));
  if (!set) throw new Error(`no device cookie in ${JSON.stringify(answer.headers.getSetCookie())}`);
  return set.split(';')[0]!;
};

/** Ten wrong passwords from ten addresses: the email's budget is spent. */
const attack = async (hp: TestHostplane, email: string) => {
  const statuses: number[] = [];
  for (let i = 0; i < 10; i++) statuses.push((await signIn(hp, email, `a wrong guess ${i}`)).status);
  expect(statuses).toEqual(Array(10).fill(401));
  expect((await signIn(hp, email, 'one more guess')).status).toBe(429);
};

describe.each(backends)('sign-in lockout on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend, { env: { HOSTPLANE_SIGNUP: 'open' } });
  });
  afterAll(() => hp?.stop());

  it('never spends the budget on successes: 12 correct sign-ins in a row all succeed', async () => {
    const { email } = await invitedOwner(hp, `successes-${tag}@example.com`);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++)
      statuses.push(
        (await call(hp, 'POST', '/api/v1/account/sign-in', { json: { email, password: PASSWORD } })).status,
      );
    expect(statuses).toEqual(Array(12).fill(200));
    // Nine failures after them still leave one try: the successes took nothing.
    for (let i = 0; i < 9; i++) expect((await signIn(hp, email, `typo ${i}`)).status).toBe(401);
    expect((await signIn(hp, email, PASSWORD)).status).toBe(200);
  });

  it('keeps a browser that signed in before signing in while a fresh client gets 429', async () => {
    const { email } = await invitedOwner(hp, `attacked-${tag}@example.com`);
    const first = await signIn(hp, email, PASSWORD);
    expect(first.status).toBe(200);
    const device = deviceCookieOf(first);
    const attributes = first.headers.getSetCookie().find((c) => c.startsWith('hp_device='))!;
    expect(attributes).toMatch(/HttpOnly/i);
    expect(attributes).toMatch(/SameSite=Strict/i);
    expect(attributes).toMatch(/Path=\//);
    expect(Number(/Max-Age=(\d+)/i.exec(attributes)?.[1])).toBeGreaterThanOrEqual(364 * 86400);

    await attack(hp, email);
    // The owner on a new machine waits; the owner's own browser signs in.
    const fresh = await signIn(hp, email, PASSWORD);
    expect(fresh.status).toBe(429);
    expect(Number(fresh.headers.get('retry-after'))).toBeGreaterThan(0);
    const known = await signIn(hp, email, PASSWORD, device);
    expect(known.status).toBe(200);
    expect(known.body).toMatchObject({ success: true, session: 'cookie' });
    // …and gets a fresh device cookie, which works as well.
    const renewed = deviceCookieOf(known);
    expect((await signIn(hp, email, PASSWORD, renewed)).status).toBe(200);
    // A typo on the known browser is counted against that browser, not refused outright.
    expect((await signIn(hp, email, 'my typo here', renewed)).status).toBe(401);
    expect((await signIn(hp, email, PASSWORD, renewed)).status).toBe(200);
    const metrics = await scrapeMetrics(hp);
    expect(
      metricValue(metrics, 'hostplane_account_device_sign_ins_total', { result: 'trusted' }),
    ).toBeGreaterThan(0);
  });

  it('gives no bypass to a forged device cookie or one of another account', async () => {
    const victim = await invitedOwner(hp, `victim-${tag}@example.com`);
    const other = await invitedOwner(hp, `other-${tag}@example.com`);
    const otherDevice = deviceCookieOf(await signIn(hp, other.email, PASSWORD));
    const victimDevice = deviceCookieOf(await signIn(hp, victim.email, PASSWORD));
    await attack(hp, victim.email);
    expect((await signIn(hp, victim.email, PASSWORD, otherDevice)).status).toBe(429);
    // One changed character of the signature, or a made-up value.
    const value = victimDevice.split('=')[1]!;
    const flipped = value.slice(0, -1) + (value.endsWith('A') ? 'B' : 'A');
    expect((await signIn(hp, victim.email, PASSWORD, `hp_device=${flipped}`)).status).toBe(429);
    expect((await signIn(hp, victim.email, PASSWORD, `hp_device=${'A'.repeat(65)}`)).status).toBe(429);
    const metrics = await scrapeMetrics(hp);
    expect(
      metricValue(metrics, 'hostplane_account_device_sign_ins_total', { result: 'invalid' }),
    ).toBeGreaterThan(0);
    // The real one still works.
    expect((await signIn(hp, victim.email, PASSWORD, victimDevice)).status).toBe(200);
  });

  it('locks out a device cookie that fails too often, without touching the email’s budget', async () => {
    const { email } = await invitedOwner(hp, `stolen-${tag}@example.com`);
    const device = deviceCookieOf(await signIn(hp, email, PASSWORD));
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await signIn(hp, email, `guess ${i}`, device)).status);
    expect(statuses).toEqual(Array(5).fill(401));
    // Its budget is spent: from now on it counts as an unknown client, against the email's budget,
    // which its five failures did not touch (nine failures elsewhere still leave it one try).
    for (let i = 0; i < 9; i++) expect((await signIn(hp, email, `elsewhere ${i}`)).status).toBe(401);
    expect((await signIn(hp, email, PASSWORD, device)).status).toBe(200);
    expect((await signIn(hp, email, 'the tenth failure')).status).toBe(401);
    expect((await signIn(hp, email, PASSWORD, device)).status).toBe(429);
    const metrics = await scrapeMetrics(hp);
    expect(
      metricValue(metrics, 'hostplane_account_device_sign_ins_total', { result: 'locked' }),
    ).toBeGreaterThan(0);
  });

  it('does not let sign-up or reset requests for an address spend its sign-in budget', async () => {
    const { email } = await invitedOwner(hp, `mailbombed-${tag}@example.com`);
    for (let i = 0; i < 10; i++) {
      const reset = await call(hp, 'POST', '/api/v1/account/password-reset', { json: { email } });
      expect(reset.status).toBe(202);
    }
    expect((await signIn(hp, email, PASSWORD)).status).toBe(200);
    // The requests themselves stay limited (each one mails the address).
    const more = await call(hp, 'POST', '/api/v1/account/sign-up', { json: { email, password: PASSWORD } });
    expect(more.status).toBe(429);
  });

  // One back-end is enough for the cookie's attributes (a second server per back-end is costly):
  // registered there only, not skipped on the other.
  if (backend === 'pglite+fs')
    it('sets the device cookie as __Host-, Secure over https', async () => {
      const secure = await startHostplane(backend, {
        env: { HOSTPLANE_BASE_URL: 'https://hosting.example' },
      });
      try {
        const { email } = await invitedOwner(secure, `https-${tag}@example.com`);
        const answer = await browserSignIn(secure, email);
        expect(answer.setCookie).toMatch(/^__Host-hp_session=/);
        const res = await call(secure, 'POST', '/api/v1/account/sign-in', {
          json: { email, password: PASSWORD, session: 'cookie' },
        });
        const device = res.headers.getSetCookie().find((c) => c.startsWith('__Host-hp_device='));
        expect(device).toBeDefined();
        expect(device).toMatch(/; Secure/i);
        expect(device).toMatch(/HttpOnly/i);
        expect(device).not.toMatch(/Domain=/i);
        // Presented back under its own name, it is honoured.
        await attack(secure, email);
        const pair = device!.split(';')[0]!;
        expect(
          (
            await call(secure, 'POST', '/api/v1/account/sign-in', {
              json: { email, password: PASSWORD, session: 'cookie' },
              headers: { cookie: pair },
            })
          ).status,
        ).toBe(200);
      } finally {
        await secure.stop();
      }
    });
});
