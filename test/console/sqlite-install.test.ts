import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAddress } from '../support/account-api.js';
import {
  capture,
  expectAccessible,
  owner,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';
import type { Json } from '../support/forms-api.js';

// Creating a database is apart from creating a token; the token's end-user choice is said in
// plain words; at the plan's database count the console offers no database but the limit and
// the way to the plans (Chromium against a real server; effects checked through the public API).

describe('console: create a SQLite database, then a token; the plan’s limit (Chromium)', () => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await startConsole();
  }, 120_000);
  afterAll(async () => rig?.close());

  const api = async (method: string, path: string, headers: Record<string, string>, json?: unknown) => {
    const res = await rig.hp.request(path, {
      method,
      json,
      headers: { 'x-forwarded-for': newAddress(), ...headers },
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  it('creates a database without a token, then a token for it with the end-user choice in words', async () => {
    const who = await owner(rig, 'install-owner@example.com');
    const site = await rig.hp.createSite('install-console', { email: who.email });
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${site.siteId}/sqlite`));
    await waitForText(page, 'No database yet');
    // One field, marked required; nothing about tokens.
    expect(await page.$eval('#field-database-path', (el) => (el as HTMLInputElement).required)).toBe(true);
    expect(await page.$eval('label[for=field-database-path]', (el) => el.textContent)).toContain('*');
    expect(await page.$('section[aria-labelledby=create-database-title] input[type=checkbox]')).toBeNull();
    await expectAccessible(page);
    await page.locator('#field-database-path').fill('data/guests.sqlite');
    await page.locator('section[aria-labelledby=create-database-title] button[type=submit]').click();
    await waitForText(page, 'Database data/guests.sqlite created');
    expect(await page.$('.secret')).toBeNull(); // no token to copy: none was asked for
    const listed = await api('GET', '/api/v1/sqlite/databases', { 'x-api-key': site.apiKey });
    expect(listed.body.databases.map((d: Json) => d.path)).toEqual(['data/guests.sqlite']);
    await capture(page, 'sqlite-database-created');

    // The way on: a token for it, the database chosen, the end-user choice explained.
    await page.locator('.alert-success a::-p-text(create a token)').click();
    await page.waitForSelector('#create-a-token-path');
    expect(await page.$eval('#create-a-token-path', (el) => (el as HTMLSelectElement).value)).toBe(
      'data/guests.sqlite',
    );
    await waitForText(page, 'Only visitors signed in as an end user of the database');
    await waitForText(page, 'calls without it are refused');
    expect(await page.$eval('#create-a-token-anyone', (el) => (el as HTMLInputElement).checked)).toBe(true);
    expect(await page.$eval('label[for=field-create-a-token-name]', (el) => el.textContent)).toContain('*');
    await expectAccessible(page);
    await capture(page, 'sqlite-create-token');
    await page.locator('#field-create-a-token-name').fill('guestbook page');
    await page.locator('section[aria-labelledby=create-a-token-title] button[type=submit]').click();
    await page.waitForSelector('.secret textarea');
    const token = await page.$eval('.secret textarea', (el) => (el as HTMLTextAreaElement).value);
    const origin = `http://${site.slug}.localhost:${new URL(rig.origin).port}`;
    const made = await api(
      'POST',
      '/api/v1/sqlite/exec',
      { 'x-sqlite-token': token, origin },
      {
        sql: 'CREATE TABLE guests (name TEXT)',
      },
    );
    expect(made.status).toBe(200);
  });

  it('at the plan’s database count: no create form, the limit in words, a link to Plans', async () => {
    const who = await owner(rig, 'full-owner@example.com');
    const first = await rig.hp.createSite('full-first', { email: who.email });
    const second = await rig.hp.createSite('full-second', { email: who.email });
    const installed = await api(
      'POST',
      '/api/v1/sqlite/auth/install',
      { 'x-api-key': first.apiKey },
      {
        path: 'data/app.sqlite',
        name: 'first',
        permissions: 'readwrite',
        requireUserAuth: false,
      },
    );
    expect(installed.status).toBe(200);
    // The API's own refusal counts in words too.
    const refused = await api(
      'POST',
      '/api/v1/sqlite/auth/install',
      { 'x-api-key': second.apiKey },
      {
        path: 'data/app.sqlite',
        name: 'second',
        permissions: 'readwrite',
        requireUserAuth: false,
      },
    );
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('The free plan allows 1 SQLite database and this account has 1.');

    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${second.siteId}/sqlite`));
    await waitForText(page, 'Your Free plan allows 1 SQLite database and your account has 1');
    const words = await page.evaluate(() => document.body.innerText);
    expect(words).not.toContain('1 SQLite databases');
    expect(await page.$('#field-database-path')).toBeNull();
    expect(await page.$('.database-limit a[href="/console/plans"]')).not.toBeNull();
    await expectAccessible(page);
    await capture(page, 'sqlite-limit-reached');
    await page.locator('.database-limit a').click();
    await page.waitForFunction(() => document.title.startsWith('Plans'));
  });
});
