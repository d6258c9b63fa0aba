import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, invitedOwner, PASSWORD } from '../support/account-api.js';
import {
  capture,
  expectAccessible,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';

// Issue 28: the owner sees and revokes a site's live temporary keys; sudo mode asks for the
// password in a dialog and retries the action.
describe('console: temporary keys and sudo mode (Chromium)', () => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await startConsole();
  }, 120_000);
  afterAll(async () => rig?.close());

  const ownerWithSite = async (email: string, slug: string) => {
    const owner = await invitedOwner(rig.hp, email);
    const created = await call(rig.hp, 'POST', '/api/v1/account/sites', {
      json: { slug },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    return {
      who: { email, password: PASSWORD },
      bearer: owner.bearer,
      siteId: created.body.site.id as number,
    };
  };
  const hostingInfo = (key: string) =>
    rig.hp.request('/api/v1/hosting-info', { headers: { 'x-api-key': key } }).then((r) => r.status);
  const TEMP_ROWS = 'table.temporary-keys tbody tr';

  it('lists the live temporary keys with who minted them (this browser marked) and revokes one', async () => {
    const { who, bearer, siteId } = await ownerWithSite('temp-keys-owner@example.com', 'tempkeysite');
    const minted = await call(rig.hp, 'POST', '/api/keys/generate-temp', {
      json: { storage_folder_id: siteId },
      headers: { ...bearer, 'user-agent': 'curl/8.5.0' },
    });
    const scriptKey = minted.body.temp_api_key as string;
    const page = await rig.page();
    await signIn(rig, page, who);
    // The files screen mints the console's own key with this browser's session.
    await page.goto(rig.url(`/sites/${siteId}/files`));
    await waitForText(page, 'This folder is empty');
    await page.locator('nav.tabs a ::-p-text(API keys)').click();
    await page.waitForFunction((rows) => document.querySelectorAll(rows).length === 2, {}, TEMP_ROWS);
    const rows = await page.$$eval(TEMP_ROWS, (trs) => trs.map((tr) => tr.textContent ?? ''));
    expect(rows.filter((r) => r.includes('This browser'))).toHaveLength(1);
    const scriptRow = rows.find((r) => r.includes(scriptKey.slice(0, 12)))!;
    expect(scriptRow).toContain('API token');
    expect(scriptRow).not.toContain('This browser');
    await expectAccessible(page);
    await capture(page, 'temporary-keys');

    await page.locator(`button ::-p-text(Revoke temporary key ${scriptKey.slice(0, 12)})`).click();
    await waitForText(page, `Temporary key ${scriptKey.slice(0, 12)}… revoked.`);
    expect(await hostingInfo(scriptKey)).toBe(401);
    await page.waitForFunction((rows) => document.querySelectorAll(rows).length === 1, {}, TEMP_ROWS);
    expect(await page.$eval(TEMP_ROWS, (tr) => tr.textContent)).toContain('This browser');

    // Revoking the console's own key: its next call mints another and carries on.
    await page.locator('button ::-p-text(Revoke temporary key)').click();
    await waitForText(page, 'No temporary key of this site works now.');
    await page.locator('nav.tabs a ::-p-text(Files)').click();
    await waitForText(page, 'This folder is empty');
  });

  it('asks for the password in a dialog before deleting a site when the session’s confirmation is old', async () => {
    const { who, bearer, siteId } = await ownerWithSite('sudo-owner@example.com', 'sudosite');
    const page = await rig.page();
    await signIn(rig, page, who);
    await rig.hp.services.store.db.execute(
      sql`update account_sessions set confirmed_at = now() - interval '1 hour'
          where account_id = (select id from accounts where email = ${who.email})`,
    );
    await page.goto(rig.url(`/sites/${siteId}/settings`));
    await waitForText(page, 'Subdomain (slug)');
    await page.locator('#field-confirm-slug').fill('sudosite');
    await page.locator('button ::-p-text(Delete the site)').click();
    await page.waitForSelector('dialog.sudo-dialog[open]');
    // The password field has the focus; Escape cancels, and the refusal is said on the page.
    await page.waitForFunction(() => document.activeElement?.id === 'field-sudo-password');
    await page.keyboard.press('Escape');
    await page.waitForSelector('dialog.sudo-dialog:not([open])');
    await waitForText(page, 'Confirm your password first');
    expect((await call(rig.hp, 'GET', `/api/v1/account/sites/${siteId}`, { headers: bearer })).status).toBe(
      200,
    );

    await page.locator('button ::-p-text(Delete the site)').click();
    await page.waitForSelector('dialog.sudo-dialog[open]');
    await page.waitForFunction(() => document.activeElement?.id === 'field-sudo-password');
    await page.keyboard.type('not my password');
    await page.keyboard.press('Enter');
    await page.waitForSelector('dialog.sudo-dialog [role=alert]');
    expect(await page.$eval('dialog.sudo-dialog [role=alert]', (el) => el.textContent)).toMatch(/password/i);
    await expectAccessible(page);
    await capture(page, 'sudo-dialog');
    await page.locator('#field-sudo-password').fill(PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.title.startsWith('Your sites'));
    await waitForText(page, 'No sites yet');
    expect((await call(rig.hp, 'GET', `/api/v1/account/sites/${siteId}`, { headers: bearer })).status).toBe(
      404,
    );
  });
});
