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

// The SQLite screens of a site in Chromium against a real server: every journey checked through
// the public API (the token works from the site's origin, the rows are there, the user's login is
// refused, the revoked token answers 401).

const DB = 'data/app.sqlite';
const PASSWORD = 'correct horse battery';

describe('console: SQLite (Chromium)', () => {
  let rig: ConsoleRig;
  let site: TestSite;
  let siteOrigin: string;
  let who: { email: string; password: string };
  /** A signed-in page of its own (the rig keeps a failing test's screenshot). */
  const signedIn = async (options: { phone?: boolean } = {}) => {
    const page = await rig.page(options);
    await signIn(rig, page, who);
    return page;
  };
  const at = (tab: string) => rig.url(`/sites/${site.siteId}/sqlite${tab}`);
  const dbAt = (tab: string) => at(`/${encodeURIComponent(DB)}/${tab}`);

  /** A call of the public API: the site's master key, a scoped token from the site's origin. */
  const api = async (method: string, path: string, json?: unknown, headers: Record<string, string> = {}) => {
    const res = await rig.hp.request(path, {
      method,
      json,
      headers: { 'x-forwarded-for': newAddress(), ...headers },
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json };
  };
  const master = () => ({ 'x-api-key': site.apiKey });
  const scoped = (token: string, method: string, path: string, json?: unknown, extra = {}) =>
    api(method, path, json, { 'x-sqlite-token': token, origin: siteOrigin, ...extra });
  let ownerToken: string;

  beforeAll(async () => {
    rig = await startConsole();
    who = await owner(rig, 'sqlite-owner@example.com');
    site = await rig.hp.createSite('sqlite-console', { email: who.email });
    siteOrigin = `http://${site.slug}.localhost:${new URL(rig.origin).port}`;
  }, 120_000);
  afterAll(async () => rig?.close());

  it('installs a database: the token is shown once and works from the site’s origin; size against the cap', async () => {
    const page = await signedIn();
    await page.goto(at(''));
    await waitForText(page, 'No database yet');
    await page.locator('section[aria-labelledby=create-database-title] button[type=submit]').click();
    await waitForText(page, `Database ${DB} created`);
    await page.locator('.alert-success a').click();
    await page.locator('#field-create-a-token-name').fill('app'); // any visitor: no end-user sign-in
    await page.locator('section[aria-labelledby=create-a-token-title] button[type=submit]').click();
    await page.waitForSelector('.secret textarea');
    const token = await page.$eval('.secret textarea', (el) => (el as HTMLTextAreaElement).value);
    expect(token).toMatch(/^hp_sqlite_/);
    ownerToken = token;
    // The token works on the public API from the site's origin.
    const made = await scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE seed (x TEXT)' });
    expect(made.status).toBe(200);
    const query = await scoped(token, 'POST', '/api/v1/sqlite/query', {
      sql: 'SELECT count(*) AS n FROM seed',
    });
    expect(query.body.rows).toEqual([{ n: 0 }]);
    const version = await scoped(token, 'GET', '/api/v1/sqlite/version');

    // Shown once: the list has the database, its size against the plan's 5 MB.
    await page.goto(at(''));
    await page.waitForSelector('.database [role=progressbar][aria-label=Size]');
    expect(await page.$('.secret')).toBeNull();
    expect(await page.evaluate(() => document.body.innerText)).not.toContain(token);
    const bar = await page.$eval('.database [role=progressbar][aria-label=Size]', (el) => ({
      now: el.getAttribute('aria-valuenow'),
      max: el.getAttribute('aria-valuemax'),
      text: el.getAttribute('aria-valuetext'),
    }));
    expect(Number(bar.now)).toBe(version.body.sizeBytes);
    expect(Number(bar.max)).toBe(5 * 1024 * 1024);
    expect(bar.text).toContain('of 5.0 MB');
    await waitForText(page, DB);
    await expectAccessible(page);
    await capture(page, 'sqlite-databases');
  });

  it('query console: read-only until the owner switches to write, then creates a table and rows', async () => {
    const page = await signedIn();
    await page.goto(dbAt('query'));
    await waitForText(page, 'Read-only');
    const run = async (sql: string, params = '') => {
      await page.locator('#sql').fill(sql);
      await page.locator('#sql-params').click({ count: 3 });
      await page.keyboard.press('Backspace');
      if (params) await page.locator('#sql-params').fill(params);
      await page.locator('form button[type=submit]').click();
      await page.waitForFunction(
        () => document.querySelector('form button[type=submit]')?.textContent === 'Run',
      );
    };
    const alert = () => page.$eval('[role=alert]', (el) => el.textContent ?? '');

    const create = 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, extra TEXT)';
    await run(create);
    await page.waitForSelector('[role=alert]');
    expect(await alert()).toBe(
      'This console is read-only for now: tick “Allow writes to this database” to change data.',
    );
    const before = await scoped(ownerToken, 'GET', '/api/v1/sqlite/schema');
    expect(before.body.tables.map((t: Json) => t.name)).toEqual(['seed']);

    await page.locator('#allow-writes').click();
    await waitForText(page, 'Write mode');
    await run(create);
    await waitForText(page, 'Applied: 0 rows changed');
    await run(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 120) INSERT INTO notes (body) SELECT 'note ' || i FROM n",
    );
    await waitForText(page, 'Applied: 120 rows changed');
    const long = 'x'.repeat(300);
    await run(
      'INSERT INTO notes (body, extra) VALUES (?, ?)',
      JSON.stringify(['<img src=x onerror=alert(1)>', long]),
    );
    await waitForText(page, 'last insert rowid 121');
    await run('SELECT count(*) AS n, max(id) AS top FROM notes WHERE id > ?', '[100]');
    await waitForText(page, '1 row · version');
    const cells = await page.$$eval('.sql-rows td', (tds) => tds.map((td) => td.textContent));
    expect(cells).toEqual(['21', '121']);
    // The guard's refusals, in its words.
    await run("ATTACH DATABASE '/tmp/evil.sqlite' AS evil");
    await page.waitForSelector('[role=alert]');
    const refused = await alert();
    expect(refused).not.toMatch(/server answered/i);
    expect(refused.length).toBeGreaterThan(10);
    console.info(`ATTACH refused with: ${refused}`);
    await run('SELECT * FROM notes WHERE id = ?', 'not json');
    expect(await alert()).toMatch(/JSON array/);

    // The real effect, through the public API.
    const count = await scoped(ownerToken, 'POST', '/api/v1/sqlite/query', {
      sql: 'SELECT count(*) AS n FROM notes',
    });
    expect(count.body.rows).toEqual([{ n: 121 }]);
    await run('SELECT id, body FROM notes ORDER BY id LIMIT 3');
    await page.waitForSelector('.sql-rows');
    await expectAccessible(page);
    await capture(page, 'sqlite-query-console');
  });

  it('table browser: tables from the schema, rows a page at a time, NULL and long values, markup as text', async () => {
    const page = await signedIn();
    await page.goto(dbAt('tables'));
    await page.waitForSelector('.table-list button');
    expect(await page.$$eval('.table-list button', (bs) => bs.map((b) => b.textContent))).toEqual([
      'notes',
      'seed',
    ]);
    await page.locator('.table-list ::-p-text(notes)').click();
    const status = () => page.$eval('.page-status', (el) => el.textContent ?? '');
    await page.waitForFunction(() =>
      document.querySelector('.page-status')?.textContent?.startsWith('Rows 1–50'),
    );
    expect(await status()).toBe('Rows 1–50 of 121 · page 1 of 3');
    expect(await page.$$eval('.sql-rows th', (ths) => ths.map((th) => th.textContent))).toEqual([
      'id',
      'body',
      'extra',
    ]);
    expect(await page.$$eval('.sql-rows tbody tr', (trs) => trs.length)).toBe(50);
    // NULL is marked apart from text.
    expect(await page.$eval('.sql-rows tbody tr td:nth-child(3) .sql-null', (el) => el.textContent)).toBe(
      'NULL',
    );
    const next = 'button ::-p-text(Next page)';
    await page.locator(next).click();
    await page.waitForFunction(() =>
      document.querySelector('.page-status')?.textContent?.startsWith('Rows 51–100'),
    );
    // Focus moves to the rows that changed.
    await page.waitForFunction(() => document.activeElement?.id === 'rows-title');
    await page.locator(next).click();
    await page.waitForFunction(() =>
      document.querySelector('.page-status')?.textContent?.startsWith('Rows 101–121'),
    );
    expect(await page.$eval('.pager button:last-child', (b) => (b as HTMLButtonElement).disabled)).toBe(true);
    // A visitor's markup is text; a long value is cut, with the whole on demand.
    const last = '.sql-rows tbody tr:last-child';
    expect(await page.$eval(`${last} td:nth-child(2)`, (td) => td.textContent)).toBe(
      '<img src=x onerror=alert(1)>',
    );
    expect(await page.$$('.sql-rows img')).toHaveLength(0);
    expect(await page.$eval(`${last} td:nth-child(3) .sql-text`, (el) => el.textContent)).toBe(
      `${'x'.repeat(80)}…`,
    );
    await page.locator(`${last} td:nth-child(3) button`).click();
    await page.waitForFunction(
      (sel) => document.querySelector(sel)?.textContent?.length === 300,
      {},
      `${last} td:nth-child(3) .sql-text`,
    );
    await expectAccessible(page);
    await capture(page, 'sqlite-table-browser');
  });

  it('end users: change a role, disable (login refused), reset a password, delete', async () => {
    const page = await signedIn();
    for (const email of ['admin@example.com', 'alice@example.com', 'bob@example.com']) {
      const res = await scoped(
        ownerToken,
        'POST',
        '/api/v1/sqlite/auth/register',
        { email, password: PASSWORD },
        master(),
      );
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const login = (email: string, password = PASSWORD) =>
      scoped(ownerToken, 'POST', '/api/v1/sqlite/auth/login', { email, password });
    const users = async () =>
      (await scoped(ownerToken, 'GET', '/api/v1/sqlite/auth/users', undefined, master())).body
        .users as Json[];
    const ids = Object.fromEntries((await users()).map((u) => [u.email, u.id]));
    const row = (email: string) => `tr[data-user="${email}"]`;
    const done = (text: string) =>
      page.waitForFunction((t) => document.querySelector('.alert-success')?.textContent === t, {}, text);

    await page.goto(dbAt('users'));
    await page.waitForSelector(row('bob@example.com'));
    await page.select(`#role-${ids['bob@example.com']}`, 'admin');
    await done('bob@example.com: role is now admin.');
    expect((await users()).find((u) => u.email === 'bob@example.com')?.role).toBe('admin');

    await page.locator(`${row('alice@example.com')} ::-p-text(Disable)`).click();
    await done('alice@example.com: disabled, signed out.');
    const refused = await login('alice@example.com');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('ACCOUNT_DISABLED');

    await page.locator(`${row('admin@example.com')} ::-p-text(Reset password)`).click();
    await page.locator(`#new-password-${ids['admin@example.com']}`).fill('a fresh admin secret');
    await page.locator(`${row('admin@example.com')} form button[type=submit]`).click();
    await done('admin@example.com: password reset, signed out everywhere.');
    expect((await login('admin@example.com', 'a fresh admin secret')).status).toBe(200);
    expect((await login('admin@example.com')).status).toBe(401);

    // Adding a fourth user goes past the free plan's three: the server says so.
    const add = async (email: string) => {
      await page.locator('#field-user-email').fill(email);
      await page.locator('#field-user-password').fill('carol has a long password');
      await page.locator('section[aria-labelledby=add-user-title] button[type=submit]').click();
    };
    await add('carol@example.com');
    await page.waitForFunction(
      () =>
        document.querySelector('[role=alert]')?.textContent ===
        'This database already has the 3 users the free plan allows.',
    );

    await page.locator(`${row('bob@example.com')} ::-p-text(Delete)`).click();
    await done('bob@example.com: deleted.');
    expect((await users()).map((u) => u.email)).toEqual(['admin@example.com', 'alice@example.com']);
    // The list reloads after the confirmation: the row goes with it.
    await page.waitForFunction((sel) => !document.querySelector(sel), {}, row('bob@example.com'));
    await add('carol@example.com');
    await done('carol@example.com: registered.');
    const carol = await login('carol@example.com', 'carol has a long password');
    expect(carol.body.user).toMatchObject({ email: 'carol@example.com', role: 'user' });

    // The server's guard rail, in its words: the last active admin stays.
    await page.locator(`${row('admin@example.com')} ::-p-text(Disable)`).click();
    await page.waitForFunction(() =>
      document.querySelector('[role=alert]')?.textContent?.includes('last active admin'),
    );
    expect(await page.$eval('[role=alert]', (el) => el.textContent)).toBe(
      'The last active admin cannot be demoted or disabled.',
    );
    await expectAccessible(page);
    await capture(page, 'sqlite-users');
  });

  it('tokens: created (shown once), listed with state and last use, revoked', async () => {
    const page = await signedIn();
    await page.goto(at('/tokens'));
    await page.waitForSelector('tr[data-token-id]');
    await page.locator('#field-create-a-token-name').fill('widget');
    await page.select('#create-a-token-permissions', 'read');
    await page.locator('#field-create-a-token-days').fill('7');
    await page.locator('section[aria-labelledby=create-a-token-title] button[type=submit]').click();
    await page.waitForSelector('.secret textarea');
    const widget = await page.$eval('.secret textarea', (el) => (el as HTMLTextAreaElement).value);
    expect((await scoped(widget, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 1 AS one' })).status).toBe(
      200,
    );
    const write = await scoped(widget, 'POST', '/api/v1/sqlite/exec', { sql: 'DELETE FROM notes' });
    expect(write.body.message).toBe('This token is read-only.');

    const listed = (await api('GET', '/api/v1/sqlite/auth/tokens', undefined, master())).body
      .tokens as Json[];
    const record = listed.find((t) => t.name === 'widget')!;
    const widgetRow = `tr[data-token-id="${record.id}"]`;
    await page.waitForSelector(widgetRow);
    expect(await page.$eval(`${widgetRow} .badge`, (el) => el.textContent)).toBe('active');
    // The console's own tokens are listed too, and said to be.
    await page.locator('.console-tokens summary').click();
    await waitForText(page, 'Hostplane console (read)');
    await waitForText(page, 'Hostplane console (write)');

    await page.locator(`${widgetRow} ::-p-text(Revoke)`).click();
    await page.waitForFunction(
      (sel) => document.querySelector(`${sel} .badge`)?.textContent === 'revoked',
      {},
      widgetRow,
    );
    await waitForText(page, 'Token “widget” revoked.');
    const after = await scoped(widget, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 1 AS one' });
    expect(after.status).toBe(401);
    expect(after.body.message).toBe('Invalid, expired, or revoked SQLite token.');
    await expectAccessible(page);
    await capture(page, 'sqlite-tokens');
  });

  it('never makes a database from a mistyped address', async () => {
    const page = await signedIn();
    await page.goto(at(`/${encodeURIComponent('data/typo.sqlite')}/tables`));
    await page.waitForFunction(
      () =>
        document.querySelector('[role=alert]')?.textContent ===
        'This site has no SQLite database at data/typo.sqlite.',
    );
    const listed = (await api('GET', '/api/v1/sqlite/databases', undefined, master())).body
      .databases as Json[];
    expect(listed.map((d) => d.path)).toEqual([DB]);
  });

  it('reads at phone width: the table browser scrolls inside its table, not the page', async () => {
    const phone = await signedIn({ phone: true });
    await phone.goto(dbAt('tables'));
    await phone.waitForSelector('.table-list button');
    await phone.locator('.table-list ::-p-text(notes)').click();
    await phone.waitForFunction(() =>
      document.querySelector('.page-status')?.textContent?.startsWith('Rows 1–50'),
    );
    const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await expectAccessible(phone);
    await capture(phone, 'sqlite-phone');
  });

  it('revokes the console’s own tokens at sign-out', async () => {
    const page = await signedIn();
    await page.goto(dbAt('query'));
    await page.locator('#allow-writes').click();
    await page.locator('#sql').fill('SELECT 1 AS one');
    await page.locator('form button[type=submit]').click();
    await waitForText(page, '1 row · version');
    await page.goto(dbAt('tables'));
    await page.waitForSelector('.table-list button');
    const minted = await page.evaluate(() =>
      Object.keys(sessionStorage)
        .filter((k) => k.startsWith('hostplane.sqlite.'))
        .map((k) => (JSON.parse(sessionStorage.getItem(k)!) as { tokenId: number }).tokenId),
    );
    expect(minted.length).toBe(2); // read and write, for the one database
    await page.locator('button ::-p-text(Sign out)').click();
    await page.waitForFunction(() => location.pathname === '/console/sign-in');
    const tokens = (await api('GET', '/api/v1/sqlite/auth/tokens', undefined, master())).body
      .tokens as Json[];
    for (const id of minted) expect(tokens.find((t) => t.id === id)?.revokedAt, String(id)).not.toBeNull();
  });
});
