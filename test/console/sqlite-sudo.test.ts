import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAddress, PASSWORD } from '../support/account-api.js';
import { owner, signIn, startConsole, waitForText, type ConsoleRig } from '../support/console.js';
import type { TestSite } from '../support/hostplane.js';

// Issue 28: the console's temporary key carries its session's sudo mode, and installing a
// database or adding an end user with it makes a credential that outlives the key. When the
// session's confirmation is older than 15 minutes, the console asks for the password in its sudo
// dialog and retries (docs/developers/security.md "Sudo mode").
describe('console: SQLite credentials ask for the password when the confirmation is old (Chromium)', () => {
  let rig: ConsoleRig;
  let site: TestSite;
  let who: { email: string; password: string };
  beforeAll(async () => {
    rig = await startConsole();
    who = await owner(rig, 'sqlite-sudo-owner@example.com');
    site = await rig.hp.createSite('sqlite-sudo', { email: who.email });
  }, 120_000);
  afterAll(async () => rig?.close());

  /** Moves every session's last confirmation of the owner back an hour. */
  const age = () =>
    rig.hp.services.store.db.execute(
      sql`update account_sessions set confirmed_at = now() - interval '1 hour'
          where account_id = (select id from accounts where email = ${who.email})`,
    );
  const confirmInDialog = async (page: Awaited<ReturnType<ConsoleRig['page']>>) => {
    await page.waitForSelector('dialog.sudo-dialog[open]');
    await page.waitForFunction(() => document.activeElement?.id === 'field-sudo-password');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.waitForSelector('dialog.sudo-dialog:not([open])');
  };
  const databases = async () => {
    const res = await rig.hp.request('/api/v1/sqlite/databases', {
      headers: { 'x-api-key': site.apiKey, 'x-forwarded-for': newAddress() },
    });
    return ((await res.json()) as { databases: Array<{ path: string; users: number }> }).databases;
  };

  it('installing a database and adding an end user ask for the password, then succeed', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await age();
    await page.goto(rig.url(`/sites/${site.siteId}/sqlite`));
    await waitForText(page, 'No database yet');
    await page.locator('section[aria-labelledby=create-database-title] button[type=submit]').click();
    await confirmInDialog(page);
    await waitForText(page, 'Database data/app.sqlite created');
    expect((await databases()).map((d) => d.path)).toEqual(['data/app.sqlite']);

    // The users screen (its console token minted meanwhile), then the confirmation ages again:
    // adding an end user asks once more.
    await page.goto(rig.url(`/sites/${site.siteId}/sqlite/${encodeURIComponent('data/app.sqlite')}/users`));
    await waitForText(page, 'No end user yet');
    await age();
    await page.locator('#field-user-email').fill('first@example.com');
    await page.locator('#field-user-password').fill('first has a long password');
    await page.locator('section[aria-labelledby=add-user-title] button[type=submit]').click();
    await confirmInDialog(page);
    await page.waitForFunction(
      () => document.querySelector('.alert-success')?.textContent === 'first@example.com: registered.',
    );
    expect((await databases())[0]!.users).toBe(1);
  });
});
