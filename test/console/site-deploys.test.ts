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
import { deployClient } from '../support/deploys-api.js';

describe('console: the deploy history (Chromium)', () => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await startConsole();
  }, 120_000);
  afterAll(async () => rig?.close());

  it('shows the history with the live one, publishes a draft and restores an earlier deploy', async () => {
    const owner = await invitedOwner(rig.hp, 'deploys-owner@example.com');
    const created = await call(rig.hp, 'POST', '/api/v1/account/sites', {
      json: { slug: 'deploysite' },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    const siteId = (created.body.site as { id: number }).id;
    const deploys = deployClient(rig.hp.port, created.body.api_key as string);
    const first = await deploys.deploy({ 'index.html': '<p>first</p>' });
    const second = await deploys.deploy({ 'index.html': '<p>second</p>', 'about.html': '<p>about</p>' });
    const draft = await deploys.deploy({ 'index.html': '<p>draft</p>' }, true);
    const home = async () => (await rig.hp.request('/index.html', { host: 'deploysite.localhost' })).text();
    expect(await home()).toBe('<p>second</p>');

    const page = await rig.page();
    await signIn(rig, page, { email: owner.email, password: PASSWORD });
    await page.goto(rig.url(`/sites/${siteId}/files`));
    await page.locator('nav.tabs a ::-p-text(Deploys)').click();
    await page.waitForFunction(() => document.title.startsWith('deploysite: Deploys'));
    await waitForText(page, second);
    const liveRow = await page.$$eval('tbody tr', (rows) =>
      rows.filter((r) => r.textContent?.includes('Live')).map((r) => r.querySelector('code')?.textContent),
    );
    expect(liveRow).toEqual([second]);
    expect(await page.$$eval('tbody tr', (rows) => rows.length)).toBe(3);
    await expectAccessible(page);
    await capture(page, 'deploys');

    await page.locator(`button ::-p-text(Publish ${draft})`).click();
    await waitForText(page, `${draft} is live`);
    expect(await home()).toBe('<p>draft</p>');

    await page.locator(`button ::-p-text(Restore ${first})`).click();
    await waitForText(page, `${first} is live`);
    expect(await home()).toBe('<p>first</p>');
    expect((await rig.hp.request('/about.html', { host: 'deploysite.localhost' })).status).toBe(404);
  });
});
