import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invitedOwner, PASSWORD } from '../support/account-api.js';
import {
  capture,
  expectAccessible,
  signIn,
  startConsole,
  tabTo,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';
import { eventually } from '../support/eventually.js';
import { contactFields, formsApi, type FormsApi, type Json } from '../support/forms-api.js';

/**
 * The submissions inbox in Chromium, against submissions posted to the public `/f/<uuid>` route
 * from the site's origin: one a person sent, one a bot sent (honeypot filled, sent at once).
 */
describe('console: the submissions inbox, spam bin and CSV export (Chromium)', () => {
  let rig: ConsoleRig;
  let api: FormsApi;
  let who: { email: string; password: string };
  let siteId: number;
  let form: Json;
  let downloads: string;

  const list = async (query: string) =>
    (await api.call('GET', `/api/v1/forms/${form.id}/submissions?${query}`)).body.submissions as Json[];
  const byName = async (name: string) => {
    const found = (await list('per_page=100')).find((s) => s.data.name === name);
    return (await api.call('GET', `/api/v1/forms/${form.id}/submissions/${found!.uuid}`)).body
      .submission as Json;
  };
  const rowOf = (page: Page, text: string) =>
    page.waitForFunction(
      (t) => [...document.querySelectorAll('tbody tr')].find((tr) => tr.textContent?.includes(t)),
      { timeout: 15_000 },
      text,
    );

  beforeAll(async () => {
    rig = await startConsole();
    const invited = await invitedOwner(rig.hp, 'forms-inbox@example.com');
    who = { email: invited.email, password: PASSWORD };
    const site = await rig.hp.createSite('forms-inbox', { email: who.email });
    siteId = site.siteId;
    api = formsApi(rig.hp, site);
    form = await api.createOk({ name: 'Contact', fields: contactFields });
    // The site's own origin, as a browser on one of its pages sends it.
    const origin = `http://forms-inbox.localhost:${new URL(rig.origin).port}`;
    const person = await api.submit(
      form.uuid as string,
      { name: 'Ada Lovelace', email: 'ada@example.com', topic: 'Sales', message: '<b>Hello</b> there' },
      { origin, startedSecondsAgo: 30 },
    );
    expect(person.status).toBe(201);
    const bot = await api.submit(
      form.uuid as string,
      { name: 'Spam Bot', email: 'bot@example.com', message: 'Cheap pills' },
      { origin, startedSecondsAgo: 0, trap: 'gotcha' },
    );
    expect(bot.status).toBe(201);
    expect((await byName('Spam Bot')).is_spam).toBe(true);
    downloads = await mkdtemp(path.join(os.tmpdir(), 'console-csv-'));
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
    if (downloads) await rm(downloads, { recursive: true, force: true });
  });

  it('reads, archives, un-spams and exports submissions, each change visible through the API', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/forms/${form.id}/submissions`));

    // The inbox: the person's submission, unread (bold and the word), its HTML shown as text.
    await rowOf(page, 'Ada Lovelace');
    const row = await page.$eval('tbody tr', (tr) => ({ cls: tr.className, text: tr.textContent }));
    expect(row.cls).toBe('unread');
    expect(row.text).toContain('Unread');
    expect(row.text).not.toContain('Spam Bot');
    expect(await page.$('tbody b')).toBeNull();
    await waitForText(page, 'Inbox (1 unread)');
    await expectAccessible(page);
    await capture(page, 'submissions-inbox');

    // Open it: every value as text, and it is read.
    await page.locator('tbody tr ::-p-text(Open)').click();
    await page.waitForFunction(() =>
      document.querySelector('.detail-state')?.textContent?.startsWith('Read'),
    );
    await waitForText(page, '<b>Hello</b> there');
    expect((await byName('Ada Lovelace')).is_read).toBe(true);
    await page.waitForFunction(() => document.querySelector('tbody tr')?.className === 'read');

    // Archive: gone from the inbox, under Archived.
    await page.locator('.detail-actions ::-p-text(Archive)').click();
    await waitForText(page, 'Archived.');
    expect((await byName('Ada Lovelace')).is_archived).toBe(true);
    await waitForText(page, 'No submissions in the inbox.');
    await page.locator('.views ::-p-text(Archived)').click();
    await rowOf(page, 'Ada Lovelace');

    // The spam bin: the bot's submission with its score's reasons.
    await page.locator('.views ::-p-text(Spam)').click();
    await rowOf(page, 'Spam Bot');
    await page.locator('tbody tr ::-p-text(Open)').click();
    await page.waitForSelector('.spam-reasons li[data-reason=honeypot_filled]');
    await page.waitForSelector('.spam-reasons li[data-reason=submitted_too_fast]');
    await waitForText(page, 'The hidden trap field was filled in');
    await expectAccessible(page);
    await capture(page, 'submission-spam');
    // Closing the panel gives the focus back to the row it was opened from.
    await page.locator('.detail-head ::-p-text(Close)').click();
    await page.waitForFunction(() => !document.querySelector('.detail-actions'));
    await page.waitForFunction(() =>
      document.activeElement?.closest('tr')?.textContent?.includes('Spam Bot'),
    );
    await page.keyboard.press('Enter');
    await page.waitForSelector('.detail-actions');

    await page.locator('.detail-actions ::-p-text(Not spam)').click();
    await waitForText(page, 'Marked not spam');
    expect((await byName('Spam Bot')).is_spam).toBe(false);
    await waitForText(page, 'The spam bin is empty.');
    await page.locator('.views ::-p-text(Inbox)').click();
    await rowOf(page, 'Spam Bot');

    // CSV export of the inbox view, saved by the browser into a folder this test reads.
    const cdp = await page.createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', {
      behavior: 'allow',
      downloadPath: downloads,
      browserContextId: page.browserContext().id,
    });
    await page.locator('::-p-text(Export this view as CSV)').click();
    const file = await eventually('the CSV download', async () =>
      (await readdir(downloads)).find((name) => name.endsWith('.csv')),
    );
    expect(file).toBe('contact-inbox.csv');
    const rows = simpleCsv(await readFile(path.join(downloads, file), 'utf8'));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'Spam Bot', email: 'bot@example.com', is_spam: 'false' });
    await expectAccessible(page);

    // Delete after confirming: the API no longer has it.
    await page.locator('tbody tr ::-p-text(Open)').click();
    await page.waitForSelector('.detail-actions');
    await page.locator('.detail-actions ::-p-text(Delete)').click();
    await waitForText(page, 'No submissions in the inbox.');
    // Its row is gone with it: the focus lands on the view, not the top of the page.
    await page.waitForFunction(() => document.activeElement?.matches('.views [aria-pressed=true]'));
    expect((await list('per_page=100')).map((s) => s.data.name)).toEqual(['Ada Lovelace']);
  });

  it('pages a long inbox and bounds it by day', async () => {
    const paged = await api.createOk({
      name: 'Paged',
      fields: [{ name: 'name', label: 'Name', type: 'text' }],
    });
    const origin = `http://forms-inbox.localhost:${new URL(rig.origin).port}`;
    for (let i = 1; i <= 27; i++) {
      const sent = await api.submit(
        paged.uuid as string,
        { name: `Visitor ${i}` },
        { origin, startedSecondsAgo: 30 },
      );
      expect(sent.status).toBe(201);
    }
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/forms/${paged.id}/submissions`));
    await waitForText(page, 'Page 1 of 2 (27 submissions)');
    expect(await page.$$eval('tbody tr', (rows) => rows.length)).toBe(25);
    await page.locator('::-p-text(Next page)').click();
    await waitForText(page, 'Page 2 of 2');
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 2);
    // The oldest two are on the second page (newest first).
    await rowOf(page, 'Visitor 1');

    // From tomorrow on: nothing.
    await page.$eval('#sub-from', (input) => {
      const tomorrow = new Date(Date.now() + 86_400_000);
      const day = `${tomorrow.getFullYear()}-${String(tomorrow.getMonth() + 1).padStart(2, '0')}-${String(tomorrow.getDate()).padStart(2, '0')}`;
      (input as HTMLInputElement).value = day;
      input.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await waitForText(page, 'No submissions in the inbox.');
  });

  it('opens and archives a submission by keyboard alone', async () => {
    // The paged form of the test before (the free plan has room for two forms): its newest row first.
    const forms = (await api.call('GET', '/api/v1/forms')).body.forms as Json[];
    const keyed = forms.find((f) => f.name === 'Paged')!;
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/forms/${keyed.id}/submissions`));
    await rowOf(page, 'Visitor 27');
    await tabTo(page, 'Open');
    await page.keyboard.press('Enter');
    // The panel's heading takes the focus: the next Tab goes through the panel.
    await page.waitForFunction(() => document.activeElement?.id === 'submission-title');
    await page.waitForSelector('.detail-actions');
    await tabTo(page, 'Archive');
    await page.keyboard.press('Enter');
    // Said in a live region, and true through the API.
    await page.waitForFunction(() =>
      [...document.querySelectorAll('[role=status]')].some((el) => el.textContent === 'Archived.'),
    );
    // The focus stayed on the button pressed (now the way back), not thrown to the page's top.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Unarchive');
    await eventually('the submission archived', async () => {
      const rows = (await api.call('GET', `/api/v1/forms/${keyed.id}/submissions?is_archived=true`)).body
        .submissions as Json[];
      return rows.some((row) => row.data.name === 'Visitor 27') || undefined;
    });
  });

  it('is readable at phone width: the table scrolls inside its frame, the page does not', async () => {
    const ada = await byName('Ada Lovelace');
    await api.call('PATCH', `/api/v1/forms/${form.id}/submissions/${ada.uuid}`, { is_archived: true });
    const page = await rig.page({ phone: true });
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/forms/${form.id}/submissions?view=archived`));
    await rowOf(page, 'Ada Lovelace');
    await page.locator('tbody tr ::-p-text(Open)').click();
    await page.waitForSelector('.detail-actions');
    // Against the layout width: a mobile browser widens its visual viewport to fit what overflows.
    const overflow = () =>
      page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await expectAccessible(page);
    await capture(page, 'submissions-phone');

    // The other forms screens at the same width.
    for (const [below, text] of [
      [`/sites/${siteId}/forms`, 'Create a form'],
      [`/sites/${siteId}/forms/${form.id}`, 'Add a field'],
      [`/sites/${siteId}/forms/${form.id}/embed`, 'curl snippet'],
    ] as const) {
      await page.goto(rig.url(below));
      await waitForText(page, text);
      expect(await overflow(), below).toBeLessThanOrEqual(0);
    }
  });
});

/** The rows of a CSV file whose cells hold no comma, quote or line break, as objects by header. */
function simpleCsv(text: string): Array<Record<string, string>> {
  const [header, ...lines] = text.split(/\r?\n/).filter((line) => line !== '');
  const names = header!.split(',');
  return lines.map((line) => Object.fromEntries(line.split(',').map((cell, i) => [names[i], cell])));
}
