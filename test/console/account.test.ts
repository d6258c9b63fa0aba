import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAddress, PASSWORD } from '../support/account-api.js';
import {
  capture,
  expectAccessible,
  owner,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';
import { mailedLink } from '../support/console-mail.js';
import { totpCode } from '../support/totp.js';

const sitesShown = (page: Page) => page.waitForFunction(() => document.title.startsWith('Your sites'));

/** A GET of the account API from the page (its cookie session). */
const apiFromPage = <T>(page: Page, path: string) =>
  page.evaluate(async (p) => {
    const res = await fetch(p, { credentials: 'same-origin' });
    return { status: res.status, body: (await res.json()) as unknown };
  }, path) as Promise<{ status: number; body: T }>;

/**
 * A page from its own client address (the server trusts X-Forwarded-For from loopback): the
 * journeys below sign in more often in a minute than one address may.
 */
async function pageOf(rig: ConsoleRig, options: { phone?: boolean } = {}): Promise<Page> {
  const page = await rig.page(options);
  await page.setExtraHTTPHeaders({ 'x-forwarded-for': newAddress() });
  return page;
}

describe('console: invitation, password reset, verification, account and two-factor sign-in (Chromium)', () => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await startConsole({ worker: true });
  }, 120_000);
  afterAll(async () => rig?.close());

  it('an invited owner opens the mailed link, sets a password and lands on the sites list', async () => {
    const email = 'invited-console@example.com';
    await rig.hp.services.platform.accounts.invite({ email });
    const link = await mailedLink(rig, email, 'You are invited to Hostplane');
    const page = await pageOf(rig);
    await page.goto(link);
    await page.waitForSelector('#field-password');
    // The token leaves the address bar once read.
    expect(page.url()).toBe(rig.url('/invite'));
    await expectAccessible(page);
    await capture(page, 'invite');
    await page.locator('#field-password').fill('password');
    await page.locator('button[type=submit]').click();
    await waitForText(page, 'too common');
    // A password built on the service's name: the message says which rule it broke.
    await page.locator('#field-password').fill('hostplane2026');
    await page.locator('button[type=submit]').click();
    await waitForText(page, 'built on the email address, the site');
    await page.locator('#field-password').fill(PASSWORD);
    await page.locator('button[type=submit]').click();
    await sitesShown(page);
    const me = await apiFromPage<{ email: string; email_verified: boolean }>(page, '/api/v1/account');
    expect(me.body).toMatchObject({ email, email_verified: true });
    // The link works once.
    const again = await pageOf(rig);
    await again.goto(link);
    await again.locator('#field-password').fill(PASSWORD);
    await again.locator('button[type=submit]').click();
    await waitForText(again, 'invalid, expired or already used');
  });

  it('forgot password: a neutral answer, the mailed link sets a new password, then sign-in works with it', async () => {
    const who = await owner(rig, 'forgetful@example.com');
    const page = await pageOf(rig);
    await page.goto(rig.url('/sign-in'));
    await page.locator('a[href="/console/forgot"]').click();
    await page.waitForSelector('#field-email');
    await expectAccessible(page);
    await capture(page, 'forgot');
    await page.locator('#field-email').fill(who.email);
    await page.locator('button[type=submit]').click();
    await waitForText(page, 'a mail with a link is on its way');
    const link = await mailedLink(rig, who.email, 'Reset your Hostplane password');
    await page.goto(link);
    await page.waitForSelector('#field-password');
    await expectAccessible(page);
    await capture(page, 'reset');
    const newPassword = 'a brand new passphrase 7';
    await page.locator('#field-password').fill(newPassword);
    await page.locator('button[type=submit]').click();
    await waitForText(page, 'Your password is set');
    await page.locator('a[href="/console/sign-in"]').click();
    await page.waitForSelector('#field-email');
    await signIn(rig, page, { email: who.email, password: newPassword });
  });

  it('sets up two-factor sign-in from the account screen, then signs in with a code and with a recovery code', async () => {
    const who = await owner(rig, 'two-factor@example.com');
    const page = await pageOf(rig);
    await signIn(rig, page, who);
    await page.locator('nav a[href="/console/account"]').click();
    await page.waitForSelector('#field-totp-password');
    await page.locator('#field-totp-password').fill(who.password);
    await page.locator('button::-p-text(Set up two-factor sign-in)').click();
    const secret = await page
      .waitForSelector('.totp-secret')
      .then((el) => el!.evaluate((e) => e.textContent!));
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(await page.$eval('svg.qr path', (p) => p.getAttribute('d')!.length)).toBeGreaterThan(1000);
    await expectAccessible(page);
    await capture(page, 'totp-setup');
    await page.locator('#field-totp-code').fill(totpCode(secret));
    await page.locator('button::-p-text(Turn on)').click();
    await page.waitForSelector('.recovery-codes li');
    const codes = await page.$$eval('.recovery-codes li', (items) => items.map((li) => li.textContent!));
    expect(codes).toHaveLength(10);
    expect(await page.$('a[download="hostplane-recovery-codes.txt"]')).not.toBeNull();
    await expectAccessible(page);

    // Sign out, sign in: the second step asks for a code.
    await page.locator('header button::-p-text(Sign out)').click();
    await page.waitForSelector('#field-email');
    await page.locator('#field-email').fill(who.email);
    await page.locator('#field-password').fill(who.password);
    await page.locator('button[type=submit]').click();
    await page.waitForSelector('#field-code');
    await expectAccessible(page);
    await capture(page, 'totp-sign-in');
    await page.locator('#field-code').fill(totpCode(secret)); // the step that turned it on: refused
    await page.locator('button[type=submit]').click();
    await waitForText(page, 'wrong or was already used');
    await page.locator('#field-code').fill(totpCode(secret, 1));
    await page.locator('button[type=submit]').click();
    await sitesShown(page);

    // And with a recovery code, which then is used up.
    await page.locator('header button::-p-text(Sign out)').click();
    await page.waitForSelector('#field-email');
    await page.locator('#field-email').fill(who.email);
    await page.locator('#field-password').fill(who.password);
    await page.locator('button[type=submit]').click();
    await page.locator('button::-p-text(Use a recovery code instead)').click();
    await page.locator('#field-recovery-code').fill(codes[0]!);
    await page.locator('button[type=submit]').click();
    await sitesShown(page);
    const state = await apiFromPage<{ enabled: boolean; recovery_codes_left: number }>(
      page,
      '/api/v1/account/totp',
    );
    expect(state.body).toMatchObject({ enabled: true, recovery_codes_left: 9 });

    // New recovery codes, then off: both need the password and a code (here recovery codes).
    await page.goto(rig.url('/account'));
    await waitForText(page, '9 recovery codes left');
    await page.locator('#field-totp-password').fill(who.password);
    await page.locator('#field-totp-code').fill(codes[1]!);
    await page.locator('button::-p-text(New recovery codes)').click();
    await waitForText(page, 'the earlier ones no longer work');
    const fresh = await page.$$eval('.recovery-codes li', (items) => items.map((li) => li.textContent!));
    expect(fresh).toHaveLength(10);
    expect(fresh).not.toContain(codes[2]);
    await page.locator('#field-totp-password').fill(who.password);
    await page.locator('#field-totp-code').fill(fresh[0]!);
    await page.locator('button::-p-text(Turn off)').click();
    await waitForText(page, 'Two-factor sign-in is off.');
    await page.waitForSelector('::-p-text(Set up two-factor sign-in)');
  });

  it('verifies the address from the mailed link, lists sessions, ends one, and a password change ends the others', async () => {
    const email = 'unverified@example.com';
    await rig.hp.services.platform.accounts.signUp(email, PASSWORD);
    const page = await pageOf(rig);
    await signIn(rig, page, { email, password: PASSWORD });
    await page.goto(rig.url('/account'));
    await waitForText(page, 'Not verified yet');
    await page.locator('button::-p-text(Mail me a new link)').click();
    await waitForText(page, 'a mail with a link is on its way');
    const link = await mailedLink(rig, email, 'Confirm your email address', 2);
    await page.goto(link);
    await waitForText(page, 'Your email address is verified');
    await expectAccessible(page);
    await capture(page, 'verify');

    // A second browser and a third: three sessions, this one marked.
    const other = await pageOf(rig);
    await signIn(rig, other, { email, password: PASSWORD });
    const third = await pageOf(rig);
    await signIn(rig, third, { email, password: PASSWORD });
    await page.goto(rig.url('/account'));
    await waitForText(page, 'Verified');
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 3);
    expect(await page.$$eval('tr.current-session', (rows) => rows.length)).toBe(1);
    await expectAccessible(page);
    await capture(page, 'account');
    // End the newest other session (the third browser's): it is signed out at once.
    await page.locator('tbody tr:not(.current-session) button').click();
    await waitForText(page, 'ended.');
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 2);
    await third.goto(rig.url('/'));
    await third.waitForFunction(() => location.pathname === '/console/sign-in');

    // A password change keeps this session and ends the other browser's.
    await page.locator('#field-current-password').fill(PASSWORD);
    await page.locator('#field-new-password').fill('another long passphrase 9');
    await page.locator('button::-p-text(Change the password)').click();
    await waitForText(page, 'your other sessions have ended');
    await other.goto(rig.url('/'));
    await other.waitForFunction(() => location.pathname === '/console/sign-in');
    expect((await apiFromPage(page, '/api/v1/account')).status).toBe(200);
  });

  it('shows the plans with their limits and the owner’s marked; the account screen fits a phone', async () => {
    const who = await owner(rig, 'plans@example.com');
    const page = await pageOf(rig);
    await signIn(rig, page, who);
    await page.locator('nav a[href="/console/plans"]').click();
    await page.waitForSelector('table.plans');
    const headers = await page.$$eval('table.plans thead th', (ths) => ths.map((th) => th.textContent));
    expect(headers).toEqual(['Limit', 'FreeYour plan', 'Standard', 'Premium', 'Business', 'Enterprise']);
    await waitForText(page, 'changed by the operator');
    await expectAccessible(page);
    await capture(page, 'plans');

    const phone = await pageOf(rig, { phone: true });
    await signIn(rig, phone, who);
    await phone.goto(rig.url('/account'));
    await phone.waitForSelector('tbody tr');
    const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await expectAccessible(phone);
    await capture(phone, 'account-phone');
  });

  it('tells a visitor that sign-up is by invitation on this server', async () => {
    const page = await pageOf(rig);
    await page.goto(rig.url('/sign-up'));
    await waitForText(page, 'come by invitation');
    expect(await page.$('a[href="/console/sign-up"]')).toBeNull();
    await expectAccessible(page);
  });
});
