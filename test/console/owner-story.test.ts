import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ElementHandle, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAddress, PASSWORD } from '../support/account-api.js';
import { capture, startConsole, waitForText, type ConsoleRig } from '../support/console.js';
import { mailedLink } from '../support/console-mail.js';
import { formsApi, type Json } from '../support/forms-api.js';

/**
 * Issue 20's "done when", as one person lives it in Chromium, without the server's shell: an
 * owner invited by the operator sets a password from the mailed link, creates a site, uploads a
 * folder, takes an API key, reads a form's submission and browses a SQLite table — each step
 * checked where it lands (the site's host, the public API).
 */
describe('console: a new owner, from the invitation to a SQLite table (Chromium)', () => {
  let rig: ConsoleRig;
  let dir: string;
  beforeAll(async () => {
    rig = await startConsole({ worker: true });
    dir = await mkdtemp(path.join(os.tmpdir(), 'console-story-'));
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const titled = (page: Page, prefix: string) =>
    page.waitForFunction((p) => document.title.startsWith(p), { timeout: 15_000 }, prefix);

  it('invited, signs in, creates a site, uploads a folder, gets a key, reads a submission, browses a table', async () => {
    const email = 'new-owner@example.com';
    // The operator's part: `hostplane admin invite --email …` runs this, and the mail goes out.
    await rig.hp.services.platform.accounts.invite({ email });
    const page = await rig.page();
    await page.setExtraHTTPHeaders({ 'x-forwarded-for': newAddress() });
    await page.goto(await mailedLink(rig, email, 'You are invited to Hostplane'));
    await page.locator('#field-password').fill(PASSWORD);
    await page.locator('button[type=submit]').click();
    await titled(page, 'Your sites');

    // A site.
    await page.locator('#field-slug').fill('story');
    await page.locator('form.row button[type=submit]').click();
    await waitForText(page, 'Site story created');
    await capture(page, 'sites');
    await page.locator('.cards a ::-p-text(story)').click();
    await titled(page, 'story: Files');
    const siteId = Number(new URL(page.url()).pathname.split('/')[3]);

    // A folder, published as the site (one deploy) and served at the site's address, styled.
    const folder = path.join(dir, 'www');
    await mkdir(path.join(folder, 'css'), { recursive: true });
    await writeFile(path.join(folder, 'index.html'), '<!doctype html><title>Story</title><h1>Our story</h1>');
    await writeFile(path.join(folder, 'css', 'site.css'), 'h1 { color: teal }');
    await page.waitForSelector('[data-testid=upload-folder]');
    const input = (await page.$('[data-testid=upload-folder]')) as ElementHandle<HTMLInputElement>;
    await input.uploadFile(folder);
    await page.locator('[data-testid=folder-choice] button ::-p-text(Deploy 2 files as the site)').click();
    await page.waitForFunction(
      () =>
        document
          .querySelector('[data-testid=deploy-progress]')
          ?.textContent?.includes('Live: www/ is the site'),
      { timeout: 30_000 },
    );
    const served = await rig.hp.request('/', { host: 'story.localhost' });
    expect(await served.text()).toContain('Our story');
    const css = await rig.hp.request('/css/site.css', { host: 'story.localhost' });
    expect(await css.text()).toBe('h1 { color: teal }');

    // A key, which works on the public API.
    await page.locator('nav.tabs a ::-p-text(API keys)').click();
    await titled(page, 'story: API keys');
    await page.locator('button ::-p-text(Create a key)').click();
    await page.waitForSelector('.secret textarea');
    const key = await page.$eval('.secret textarea', (el) => (el as HTMLTextAreaElement).value);
    const info = await rig.hp.request('/api/v1/hosting-info', { headers: { 'x-api-key': key } });
    expect(info.status).toBe(200);

    // A form, a visitor's submission from the site's page, read in the inbox.
    await page.locator('nav.tabs a ::-p-text(Forms)').click();
    await waitForText(page, 'No forms yet');
    await page.locator('#field-form-name').fill('Contact');
    await page.locator('::-p-text(Create form)').click();
    await waitForText(page, 'Active: the form accepts submissions.');
    const forms = formsApi(rig.hp, { siteId, apiKey: key, slug: 'story', accountId: 0, email });
    const [form] = (await forms.call('GET', '/api/v1/forms')).body.forms as Json[];
    const origin = `http://story.localhost:${new URL(rig.origin).port}`;
    const sent = await forms.submit(
      form!.uuid as string,
      { email: 'reader@example.com' },
      { origin, startedSecondsAgo: 30 },
    );
    expect(sent.status).toBe(201);
    await page.goto(rig.url(`/sites/${siteId}/forms/${form!.id as number}/submissions`));
    await waitForText(page, 'Inbox (1 unread)');
    await page.locator('tbody tr ::-p-text(Open)').click();
    await waitForText(page, 'reader@example.com');

    // A SQLite database: installed, written in the query console once writes are allowed, browsed.
    await page.locator('nav.tabs a ::-p-text(SQLite)').click();
    await waitForText(page, 'No database yet');
    await page.locator('section[aria-labelledby=create-database-title] button[type=submit]').click();
    const db = 'data/app.sqlite';
    await waitForText(page, `Database ${db} created`);
    await page.goto(rig.url(`/sites/${siteId}/sqlite/${encodeURIComponent(db)}/query`));
    await waitForText(page, 'Read-only');
    await page.locator('#allow-writes').click();
    await waitForText(page, 'Write mode');
    const run = async (sql: string, done: string) => {
      await page.locator('#sql').fill(sql);
      await page.locator('form button[type=submit]').click();
      await waitForText(page, done);
    };
    await run('CREATE TABLE guests (name TEXT)', 'Applied: 0 rows changed');
    await run("INSERT INTO guests (name) VALUES ('Grace Hopper')", 'Applied: 1 row');
    await page.goto(rig.url(`/sites/${siteId}/sqlite/${encodeURIComponent(db)}/tables`));
    await page.locator('.table-list ::-p-text(guests)').click();
    await page.waitForFunction(() =>
      [...document.querySelectorAll('.sql-rows tbody td')].some((td) => td.textContent === 'Grace Hopper'),
    );
  });
});
