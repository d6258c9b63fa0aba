import type { Page } from 'puppeteer-core';
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
import type { TestSite } from '../support/hostplane.js';

// The table browser edits rows (Chromium against a real server): add, edit and delete behind the
// query console's write confirmation, sorted and filtered by the server; every effect checked
// through the public SQLite API with a token of the owner's own.

const DB = 'data/shop.sqlite';
const ODD = 'odd "name"; --';

describe('console: the table browser edits, sorts and filters rows (Chromium)', () => {
  let rig: ConsoleRig;
  let site: TestSite;
  let token: string;
  let siteOrigin: string;
  let who: { email: string; password: string };

  const sql = async (path: string, body: unknown) => {
    const res = await rig.hp.request(`/api/v1/sqlite/${path}`, {
      method: 'POST',
      json: body,
      headers: { 'x-forwarded-for': newAddress(), 'x-sqlite-token': token, origin: siteOrigin },
    });
    const json = (await res.json()) as Json;
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const rowsOf = async (query: string) => (await sql('query', { sql: query })).rows as Json[];

  /** Every dialog's message (the rig's own handler accepts them). */
  const dialogs = (page: Page) => {
    const seen: string[] = [];
    page.on('dialog', (dialog) => void seen.push(dialog.message()));
    return seen;
  };
  const statusText = (page: Page) => page.$eval('.page-status', (el) => el.textContent ?? '');
  const cells = (page: Page, column: number) =>
    page.$$eval(`.sql-rows tbody td:nth-child(${column})`, (tds) => tds.map((td) => td.textContent));
  const waitForStatus = (page: Page, text: string) =>
    page.waitForFunction((t) => document.querySelector('.page-status')?.textContent === t, {}, text);

  beforeAll(async () => {
    rig = await startConsole();
    who = await owner(rig, 'tables-owner@example.com');
    site = await rig.hp.createSite('tables-console', { email: who.email });
    siteOrigin = `http://${site.slug}.localhost:${new URL(rig.origin).port}`;
    const installed = await rig.hp.request('/api/v1/sqlite/auth/install', {
      method: 'POST',
      json: { path: DB, name: 'test', permissions: 'readwrite', requireUserAuth: false },
      headers: { 'x-api-key': site.apiKey, 'x-forwarded-for': newAddress() },
    });
    token = ((await installed.json()) as Json).token as string;
    await sql('batch', {
      statements: [
        { sql: 'CREATE TABLE fruit (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER)' },
        { sql: "INSERT INTO fruit (name, qty) VALUES ('apple', 5), ('banana', 12), ('cherry', 7)" },
        { sql: `CREATE TABLE "${ODD.replace(/"/g, '""')}" (code TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID` },
        { sql: `INSERT INTO "${ODD.replace(/"/g, '""')}" VALUES ('b', 2), ('a', 1)` },
      ],
    });
  }, 120_000);
  afterAll(async () => rig?.close());

  const open = async (table: string) => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${site.siteId}/sqlite/${encodeURIComponent(DB)}/tables`));
    await page.waitForSelector('.table-list button');
    await page.locator(`.table-list ::-p-text(${table})`).click();
    await page.waitForSelector(`#rows-title::-p-text(${table})`);
    await page.waitForFunction(() => document.querySelector('.page-status')?.textContent?.startsWith('Rows'));
    return page;
  };

  it('adds, edits and deletes a row only after writes are allowed, each delete confirmed', async () => {
    const page = await open('fruit');
    const seen = dialogs(page);
    // Read-only until the owner allows writes.
    expect(await page.$('::-p-text(Add a row)')).toBeNull();
    expect(await page.$('button[aria-label^="Edit row"]')).toBeNull();
    await page.locator('#allow-writes').click();
    expect(seen).toEqual([`Allow this console to change the data of ${DB}?`]);

    await page.locator('button::-p-text(Add a row)').click();
    await page.waitForSelector('#row-editor-title');
    expect(await page.$eval('#row-field-1', (el) => (el as HTMLInputElement).required)).toBe(true);
    await page.locator('#row-field-1').fill('damson');
    await page.locator('#row-field-2').fill('3');
    await expectAccessible(page);
    await capture(page, 'sqlite-row-add');
    await page.locator('.row-editor button[type=submit]').click();
    await waitForText(page, 'Row added (rowid 4).');
    expect(await rowsOf("SELECT id, qty, typeof(qty) AS t FROM fruit WHERE name = 'damson'")).toEqual([
      { id: 4, qty: 3, t: 'integer' },
    ]);
    await waitForStatus(page, 'Rows 1–4 of 4 · page 1 of 1');

    await page.locator('button[aria-label="Edit row 2"]').click();
    await page.waitForSelector('#row-editor-title::-p-text(Edit row 2)');
    expect(await page.$eval('#row-field-1', (el) => (el as HTMLInputElement).value)).toBe('banana');
    await page.locator('#row-field-2').fill('13');
    await page.locator('.row-editor input[type=checkbox]').click(); // qty's NULL box… then back
    await page.locator('.row-editor input[type=checkbox]').click();
    await page.locator('.row-editor button[type=submit]').click();
    await waitForText(page, 'Row saved.');
    expect(await rowsOf('SELECT name, qty FROM fruit WHERE id = 2')).toEqual([{ name: 'banana', qty: 13 }]);

    await page.locator('button[aria-label="Delete row 1"]').click();
    await waitForText(page, 'Row 1 deleted.');
    expect(seen.at(-1)).toBe('Delete row 1 of fruit? This cannot be undone.');
    expect(await rowsOf('SELECT count(*) AS n FROM fruit WHERE id = 1')).toEqual([{ n: 0 }]);
    await waitForStatus(page, 'Rows 1–3 of 3 · page 1 of 1');
    await expectAccessible(page);
    await capture(page, 'sqlite-row-edit');
  });

  it('sorts by a column (server-side) and filters by one, with the value as a parameter', async () => {
    const page = await open('fruit');
    await page.locator('th button::-p-text(qty)').click();
    await page.waitForFunction(() => document.querySelector('th[aria-sort=ascending]') !== null);
    // The sorted page replaces the first one when its answer comes (the header changes at once).
    await page.waitForFunction(
      () => document.querySelector('.sql-rows tbody td:nth-child(2)')?.textContent === 'damson',
    );
    expect(await cells(page, 2)).toEqual(['damson', 'cherry', 'banana']);
    await page.locator('th button::-p-text(qty)').click();
    await page.waitForFunction(() => document.querySelector('th[aria-sort=descending]') !== null);
    await page.waitForFunction(
      () => document.querySelector('.sql-rows tbody td:nth-child(2)')?.textContent === 'banana',
    );
    expect(await cells(page, 2)).toEqual(['banana', 'cherry', 'damson']);

    await page.select('#filter-column', 'name');
    await page.select('#filter-op', 'contains');
    await page.locator('#filter-value').fill('AN');
    await page.locator('form.filter button[type=submit]').click();
    await waitForStatus(page, 'Rows 1–1 of 1 · page 1 of 1');
    expect(await cells(page, 2)).toEqual(['banana']);

    await page.select('#filter-column', 'qty');
    await page.select('#filter-op', 'gt');
    await page.locator('#filter-value').fill('5');
    await page.locator('form.filter button[type=submit]').click();
    await waitForStatus(page, 'Rows 1–2 of 2 · page 1 of 1');
    expect(await cells(page, 2)).toEqual(['banana', 'cherry']);

    // The value is a parameter, LIKE's wildcards literal: nothing has a % in its name.
    await page.select('#filter-column', 'name');
    await page.select('#filter-op', 'contains');
    await page.locator('#filter-value').fill("%' OR 1=1 --");
    await page.locator('form.filter button[type=submit]').click();
    await waitForStatus(page, 'No row matches the filter.');
    await page.locator('button::-p-text(Clear the filter)').click();
    await waitForStatus(page, 'Rows 1–3 of 3 · page 1 of 1');
    expect(await statusText(page)).toBe('Rows 1–3 of 3 · page 1 of 1');
    await expectAccessible(page);
  });

  it('a table WITHOUT ROWID with an awkward name: rows named by their primary key', async () => {
    const page = await open(ODD);
    await page.locator('#allow-writes').click();
    expect(await cells(page, 1)).toEqual(['a', 'b']);
    await page.locator('button[aria-label="Edit the row code = b"]').click();
    await page.locator('#row-field-1').fill('20');
    await page.locator('.row-editor button[type=submit]').click();
    await waitForText(page, 'Row saved.');
    const table = `"${ODD.replace(/"/g, '""')}"`;
    expect(await rowsOf(`SELECT code, n FROM ${table} ORDER BY code`)).toEqual([
      { code: 'a', n: 1 },
      { code: 'b', n: 20 },
    ]);
    await page.locator('button[aria-label="Delete the row code = a"]').click();
    await waitForText(page, 'The row code = a deleted.');
    expect(await rowsOf(`SELECT code FROM ${table}`)).toEqual([{ code: 'b' }]);
    // The other tables are untouched.
    expect(await rowsOf('SELECT count(*) AS n FROM fruit')).toEqual([{ n: 3 }]);
  });
});
