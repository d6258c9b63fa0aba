import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAddress } from '../support/account-api.js';
import {
  capture,
  expectAccessible,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';
import { mailedLink } from '../support/console-mail.js';

describe('console: open sign-up (HOSTPLANE_SIGNUP=open, Chromium)', () => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await startConsole({ worker: true, env: { HOSTPLANE_SIGNUP: 'open' } });
  }, 120_000);
  afterAll(async () => rig?.close());

  it('signs up from the sign-in screen, confirms the address from the mail, then creates a site', async () => {
    const email = 'newcomer@example.com';
    const password = 'my own long passphrase 8';
    const page = await rig.page();
    await page.setExtraHTTPHeaders({ 'x-forwarded-for': newAddress() });
    await page.goto(rig.url('/sign-in'));
    await page.locator('a[href="/console/sign-up"]').click();
    await page.waitForSelector('#field-email');
    await expectAccessible(page);
    await capture(page, 'sign-up');
    await page.locator('#field-email').fill(email);
    await page.locator('#field-password').fill(password);
    await page.locator('button[type=submit]').click();
    await waitForText(page, 'Follow it to confirm your address');

    const link = await mailedLink(rig, email, 'Confirm your email address');
    await page.goto(link);
    await waitForText(page, 'Your email address is verified');
    await signIn(rig, page, { email, password });
    await page.locator('#field-slug').fill('newcomer-site');
    await page.locator('form.row button[type=submit]').click();
    await waitForText(page, 'Site newcomer-site created');
    expect(await rig.hp.services.platform.siteBySlug('newcomer-site')).toBeDefined();
  });
});
