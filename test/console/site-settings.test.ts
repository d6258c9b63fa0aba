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

/** An invited owner with one site made through the account API: what the site screens need. */
async function ownerWithSite(rig: ConsoleRig, email: string, slug: string) {
  const owner = await invitedOwner(rig.hp, email);
  const created = await call(rig.hp, 'POST', '/api/v1/account/sites', {
    json: { slug },
    headers: owner.bearer,
  });
  expect(created.status).toBe(201);
  return {
    who: { email, password: PASSWORD },
    bearer: owner.bearer,
    siteId: (created.body.site as { id: number }).id,
    slug,
  };
}

const PERMANENT_ROWS = 'table.permanent-keys tbody tr';

const hostingInfo = (rig: ConsoleRig, key: string) =>
  rig.hp.request('/api/v1/hosting-info', { headers: { 'x-api-key': key } }).then((r) => r.status);

/** The value of the shown-once secret with this label. */
const secretValue = (page: import('puppeteer-core').Page, label: string) =>
  page.$$eval(
    '.secret label',
    (labels, want) =>
      (labels.find((l) => l.textContent?.startsWith(want))?.querySelector('textarea') as HTMLTextAreaElement)
        ?.value,
    label,
  );

describe('console: keys, domains (DNS proof) and settings (Chromium)', () => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await startConsole({ env: { HOSTPLANE_DOMAIN_VERIFICATION: 'dns' } });
  }, 120_000);
  afterAll(async () => rig?.close());

  it('creates a permanent key shown once, revokes it (401 after), and mints a temporary key', async () => {
    const { who, siteId } = await ownerWithSite(rig, 'keys-owner@example.com', 'keysite');
    const page = await rig.page();
    await signIn(rig, page, who);
    // The files screen mints the console's own temporary key: it must not show among the permanent keys.
    await page.goto(rig.url(`/sites/${siteId}/files`));
    await waitForText(page, 'This folder is empty');
    await page.locator('nav.tabs a ::-p-text(API keys)').click();
    await page.waitForFunction(() => document.title.startsWith('keysite: API keys'));
    await page.waitForSelector('table.permanent-keys code');
    expect(await page.$$eval(PERMANENT_ROWS, (rows) => rows.length)).toBe(1); // the site's first key only

    await page.locator('button ::-p-text(Create a key)').click();
    await page.waitForSelector('.secret textarea');
    const key = await secretValue(page, 'New API key');
    expect(key).toMatch(/^hp_/);
    await page.waitForFunction((rows) => document.querySelectorAll(rows).length === 2, {}, PERMANENT_ROWS);
    expect(await hostingInfo(rig, key!)).toBe(200);
    await expectAccessible(page);
    await capture(page, 'keys');

    // Used once: after a reload the list says when.
    await page.reload();
    await page.waitForFunction(
      (prefix, rows) =>
        [...document.querySelectorAll(rows)].some(
          (row) => row.textContent?.includes(prefix) && !row.textContent.includes('never'),
        ),
      {},
      key!.slice(0, 12),
      PERMANENT_ROWS,
    );
    await page.locator(`button ::-p-text(Revoke ${key!.slice(0, 12)})`).click();
    await waitForText(page, `Key ${key!.slice(0, 12)}… revoked.`);
    expect(await hostingInfo(rig, key!)).toBe(401);
    expect(await page.$$eval(PERMANENT_ROWS, (rows) => rows.length)).toBe(1);

    await page.select('#field-lifetime', '86400');
    await page.locator('button ::-p-text(Create a temporary key)').click();
    await waitForText(page, 'it expires on');
    const temp = await secretValue(page, 'Temporary API key');
    expect(temp).toMatch(/^hp_temp_/);
    expect(await hostingInfo(rig, temp!)).toBe(200);
    // A day, not the default hour: the shown expiry is about 24 h away.
    const shown = await page.$eval('[role=status] strong', (el) => el.textContent ?? '');
    const hoursAway = (Date.parse(shown) - Date.now()) / 3_600_000;
    expect(hoursAway).toBeGreaterThan(23);
    expect(hoursAway).toBeLessThan(25);
    expect(await page.$$eval(PERMANENT_ROWS, (rows) => rows.length)).toBe(1); // temporary keys are listed apart
  });

  it('attaches a domain pending its TXT record, checks it (not found yet), detaches it', async () => {
    const { who, siteId, bearer } = await ownerWithSite(rig, 'domains-owner@example.com', 'domainsite');
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/domains`));
    await waitForText(page, 'No custom domains');
    await page.locator('#field-hostname').fill('www.console-proof.invalid');
    await page.locator('form button[type=submit] ::-p-text(Attach)').click();
    await waitForText(page, 'Pending verification');
    expect(await secretValue(page, 'Record name for')).toBe('_hostplane.www.console-proof.invalid');
    const value = await secretValue(page, 'Record value for');
    expect(value).toBeTruthy();
    const listed = await call(rig.hp, 'GET', `/api/v1/account/sites/${siteId}/domains`, { headers: bearer });
    const domains = listed.body.domains as Array<{ status: string; verification: { value: string } }>;
    expect(domains).toMatchObject([{ status: 'pending', verification: { value } }]);
    await expectAccessible(page);
    await capture(page, 'domains');

    await page.locator('button ::-p-text(Check now)').click();
    await page.waitForSelector('[role=alert]', { timeout: 30_000 });
    const refused = await page.$eval('[role=alert]', (el) => el.textContent ?? '');
    expect(refused).toMatch(/TXT|record|verif/i);

    await page.locator('button ::-p-text(Detach)').click();
    await waitForText(page, 'www.console-proof.invalid detached.');
    const after = await call(rig.hp, 'GET', `/api/v1/account/sites/${siteId}/domains`, { headers: bearer });
    expect(after.body.domains).toEqual([]);
  }, 60_000);

  it('shows the site’s facts and deletes it only after its slug is typed', async () => {
    const { who, siteId, slug, bearer } = await ownerWithSite(rig, 'settings-owner@example.com', 'doomed');
    const put = await rig.hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: { 'x-api-key': await firstKey(rig, bearer) },
      json: { path: 'index.html', content: '<p>soon gone</p>' },
    });
    expect(put.status).toBe(200);
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/settings`));
    await waitForText(page, 'Subdomain (slug)');
    await waitForText(page, `${slug}.localhost`);
    await expectAccessible(page);
    await capture(page, 'settings');

    const button = 'button ::-p-text(Delete the site)';
    await page.locator('#field-confirm-slug').fill('doome');
    expect(await page.$eval('form .danger', (el) => (el as HTMLButtonElement).disabled)).toBe(true);
    await page.locator('#field-confirm-slug').fill(slug);
    await page.locator(button).click();
    await page.waitForFunction(() => document.title.startsWith('Your sites'));
    await waitForText(page, 'No sites yet');
    const gone = await call(rig.hp, 'GET', `/api/v1/account/sites/${siteId}`, { headers: bearer });
    expect(gone.status).toBe(404);
    expect((await rig.hp.request('/index.html', { host: `${slug}.localhost` })).status).toBe(404);
  });
});

/** The site's permanent key, made for the test through the account API. */
async function firstKey(rig: ConsoleRig, bearer: Record<string, string>): Promise<string> {
  const sites = await call(rig.hp, 'GET', '/api/v1/account/sites', { headers: bearer });
  const siteId = (sites.body.sites as Array<{ id: number }>)[0]!.id;
  const made = await call(rig.hp, 'POST', `/api/v1/account/sites/${siteId}/keys`, { headers: bearer });
  return made.body.api_key as string;
}

describe('console: a domain attached at once (HOSTPLANE_DOMAIN_VERIFICATION=off)', () => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await startConsole({ env: { HOSTPLANE_DOMAIN_VERIFICATION: 'off' } });
  }, 120_000);
  afterAll(async () => rig?.close());

  it('attaches a domain that serves the site at once, then detaches it', async () => {
    const { who, siteId, bearer } = await ownerWithSite(rig, 'domain-off@example.com', 'offsite');
    const key = await firstKey(rig, bearer);
    await rig.hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: { 'x-api-key': key },
      json: { path: 'index.html', content: '<p>on my domain</p>' },
    });
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/domains`));
    await waitForText(page, 'No custom domains');
    await page.locator('#field-hostname').fill('www.console-off.test');
    await page.locator('form button[type=submit] ::-p-text(Attach)').click();
    await waitForText(page, 'www.console-off.test is attached.');
    await waitForText(page, 'Active');
    const served = await rig.hp.request('/index.html', { host: 'www.console-off.test' });
    expect(await served.text()).toBe('<p>on my domain</p>');
    await expectAccessible(page);

    await page.locator('button ::-p-text(Detach)').click();
    await waitForText(page, 'www.console-off.test detached.');
    expect((await rig.hp.request('/index.html', { host: 'www.console-off.test' })).status).not.toBe(200);
  });
});
