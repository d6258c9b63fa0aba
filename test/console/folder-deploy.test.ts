import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ElementHandle, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  capture,
  expectAccessible,
  owner,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';
import type { TestSite } from '../support/hostplane.js';
import { sqliteApi } from '../support/sqlite-api.js';

/**
 * A folder picked or dropped in the console becomes the site, as one deploy (Netlify Drop): its
 * contents are the site's root, the CLI's files left out, refused files named before anything is
 * sent; the Deploys tab shows who made each, restores an earlier one, and says how to deploy when
 * empty. The database file shows as a database in Files. Each checked on the site's own host.
 */
describe('console: a folder becomes the site, as one deploy (Chromium)', () => {
  let rig: ConsoleRig;
  let dir: string;
  let who: { email: string; password: string };
  let sites = 0;

  beforeAll(async () => {
    // The operator allows source maps beside the spec's types: the console checks by the server's list.
    rig = await startConsole({ env: { HOSTPLANE_EXTRA_FILE_TYPES: 'map' } });
    dir = await mkdtemp(path.join(os.tmpdir(), 'console-deploy-'));
    who = await owner(rig, 'folder-deploy@example.com');
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const newSite = () => rig.hp.createSite(`dropsite${++sites}`, { email: who.email });
  const served = async (site: TestSite, sitePath: string) => {
    const res = await rig.hp.request(sitePath, { host: `${site.slug}.localhost` });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };
  const tree = async (root: string, files: Record<string, string | Buffer>) => {
    for (const [rel, content] of Object.entries(files)) {
      const file = path.join(root, rel);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, content);
    }
    return root;
  };
  const signedIn = async (at: string) => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(at));
    return page;
  };
  const pickFolder = async (page: Page, folder: string) => {
    const input = (await page.waitForSelector(
      '[data-testid=upload-folder]',
    )) as ElementHandle<HTMLInputElement>;
    await input.uploadFile(folder);
    await page.waitForSelector('[data-testid=folder-choice]');
  };
  /** A real drop of a folder: DevTools hands Chromium a directory path, as a file manager would. */
  const dropFolder = async (page: Page, folder: string) => {
    const zone = await page.waitForSelector('[data-testid=dropzone]');
    const box = (await zone!.boundingBox())!;
    const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
    const session = await page.createCDPSession();
    const data = { items: [], files: [folder], dragOperationsMask: 1 };
    await session.send('Input.dispatchDragEvent', { type: 'dragEnter', ...at, data });
    await session.send('Input.dispatchDragEvent', { type: 'dragOver', ...at, data });
    await session.send('Input.dispatchDragEvent', { type: 'drop', ...at, data });
    await page.waitForSelector('[data-testid=folder-choice]');
  };
  const deployChoice = async (page: Page) => {
    await page.locator('[data-testid=folder-choice] button ::-p-text(as the site)').click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid=deploy-progress] [role=status]')?.textContent,
      { timeout: 30_000 },
    );
    return page.$eval('[data-testid=deploy-progress]', (el) => el.textContent ?? '');
  };
  const deployRows = (page: Page) =>
    page.$$eval('tbody tr', (rows) =>
      rows.map((r) => ({
        id: r.querySelector('code')?.textContent ?? '',
        text: r.textContent ?? '',
        title: r.querySelector('time')?.getAttribute('title') ?? '',
      })),
    );

  it('publishes a picked folder’s contents as the site’s root, styled, in one deploy; restores an earlier one', async () => {
    const site = await newSite();
    const page = await signedIn(`/sites/${site.siteId}/files`);
    await waitForText(page, 'This folder is empty');
    const folder = await tree(path.join(dir, 'site'), {
      'index.html': '<!doctype html><link rel="stylesheet" href="/css/site.css"><h1>Dropped site</h1>',
      'css/site.css': 'h1 { color: teal }',
      'blog/first/index.html': '<h1>First post</h1>',
      // What hostplane deploy leaves out: its default ignores, the ignore file's patterns, databases.
      '.git/HEAD': 'ref: refs/heads/main',
      'node_modules/x/index.js': 'x',
      '.hostplaneignore': 'drafts/\n',
      'drafts/secret.html': 'not yet',
      'local.sqlite': 'SQLite format 3',
    });
    await pickFolder(page, folder);
    await waitForText(page, 'Publish the folder site/ as the site?');
    await waitForText(page, 'Deploy 3 files as the site');
    await waitForText(page, 'SQLite files local.sqlite');
    expect(await page.$('[data-testid=no-index]')).toBeNull();
    await expectAccessible(page);
    await capture(page, 'folder-deploy-choice');

    const outcome = await deployChoice(page);
    expect(outcome).toContain('Live: site/ is the site, 3 files');
    await page.waitForSelector('[data-testid=deploy-progress] a ::-p-text(See it in Deploys)');
    await expectAccessible(page);
    await capture(page, 'folder-deploy-live');
    // The folder's contents are the root: the address shows the index, and its stylesheet is served as CSS.
    expect(await served(site, '/')).toMatchObject({
      status: 200,
      text: expect.stringContaining('Dropped site'),
    });
    expect(await served(site, '/css/site.css')).toMatchObject({
      status: 200,
      type: expect.stringContaining('text/css'),
      text: 'h1 { color: teal }',
    });
    expect((await served(site, '/blog/first/')).text).toBe('<h1>First post</h1>');
    expect((await served(site, '/site/index.html')).status).toBe(404);
    expect((await served(site, '/drafts/secret.html')).status).toBe(404);
    expect((await served(site, '/node_modules/x/index.js')).status).toBe(404);
    // The list shows the new root.
    await page.waitForSelector('table.files a ::-p-text(index.html)');

    // A second version, dropped this time.
    const second = await tree(path.join(dir, 'site-v2'), { 'index.html': '<h1>Second version</h1>' });
    await dropFolder(page, second);
    expect(await deployChoice(page)).toContain('Live: site-v2/ is the site, 1 file');
    expect((await served(site, '/')).text).toBe('<h1>Second version</h1>');
    expect((await served(site, '/css/site.css')).status).toBe(404);

    await page.locator('[data-testid=deploy-progress] a ::-p-text(See it in Deploys)').click();
    await page.waitForFunction(() => document.title.startsWith('dropsite1: Deploys'));
    await page.waitForSelector('tbody tr');
    const rows = await deployRows(page);
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.text).toContain('in the console');
      expect(row.text).toMatch(/now|seconds? ago/);
      expect(row.text).toMatch(/\d+\.\d s/);
      expect(row.title).not.toBe('');
    }
    expect(rows[0]!.text).toContain('Live');
    await expectAccessible(page);
    await capture(page, 'deploys-from-console');

    await page.locator(`button ::-p-text(Restore ${rows[1]!.id})`).click();
    await waitForText(page, `${rows[1]!.id} is live`);
    expect((await served(site, '/')).text).toContain('Dropped site');
    expect((await served(site, '/css/site.css')).text).toBe('h1 { color: teal }');
  });

  it('warns when the folder has no index.html at its root, and offers the one folder that holds it', async () => {
    const site = await newSite();
    const page = await signedIn(`/sites/${site.siteId}/files`);
    await waitForText(page, 'This folder is empty');
    const project = await tree(path.join(dir, 'project'), {
      'README.txt': 'the sources',
      'src/app.js': 'console.log(1)',
      'dist/index.html': '<h1>Built</h1>',
      'dist/app.js': 'console.log(2)',
    });
    await pickFolder(page, project);
    await page.waitForSelector('[data-testid=no-index]');
    await waitForText(page, 'There is no index.html at the root of project/');
    await expectAccessible(page);
    await page.locator('button ::-p-text(Use project/dist/ as the site’s root)').click();
    await waitForText(page, 'Publish the folder project/dist/ as the site?');
    await page.waitForFunction(() => !document.querySelector('[data-testid=no-index]'));
    await waitForText(page, 'Deploy 2 files as the site');
    expect(await deployChoice(page)).toContain('Live: project/dist/ is the site, 2 files');
    expect((await served(site, '/')).text).toBe('<h1>Built</h1>');
    expect((await served(site, '/app.js')).text).toBe('console.log(2)');
    expect((await served(site, '/README.txt')).status).toBe(404);
  });

  it('names the files the server would refuse before anything is sent (by its own list of types), and deploys the others', async () => {
    const site = await newSite();
    const page = await signedIn(`/sites/${site.siteId}/files`);
    await waitForText(page, 'This folder is empty');
    const folder = await tree(path.join(dir, 'refused'), {
      'index.html': '<h1>ok</h1>',
      'app.js.map': '{"version":3}',
      'tool.exe': 'MZ',
      'big.js': Buffer.alloc(10 * 1024 * 1024 + 1, 0x61),
    });
    const created: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/v1/deploys')
        created.push(request.url());
    });
    await pickFolder(page, folder);
    await page.waitForSelector('[data-testid=refused]');
    const refused = await page.$eval('[data-testid=refused]', (el) => el.textContent ?? '');
    expect(refused).toContain('2 files are refused');
    expect(refused).toContain('tool.exe: .exe files are not served by Hostplane');
    expect(refused).toContain('big.js: 10.0 MB, over the 10 MB limit of a file');
    expect(created).toEqual([]);
    expect(refused).not.toContain('app.js.map');
    expect(await deployChoice(page)).toContain('Live: refused/ is the site, 2 files');
    expect(created).toHaveLength(1);
    expect((await served(site, '/')).text).toBe('<h1>ok</h1>');
    expect((await served(site, '/app.js.map')).type).toContain('application/json');
  });

  it('uploads into the current folder instead when asked, and keeps each folder’s upload log to itself', async () => {
    const site = await newSite();
    const page = await signedIn(`/sites/${site.siteId}/files`);
    await page.locator('#field-new-folder').fill('assets');
    await page.locator('form.create-folder button[type=submit]').click();
    await page.locator('table.files a ::-p-text(assets/)').click();
    await waitForText(page, 'In /assets');
    const folder = await tree(path.join(dir, 'icons'), { 'a.svg': '<svg/>', 'deep/b.txt': 'b' });
    await pickFolder(page, folder);
    await page.locator('[data-testid=folder-choice] button ::-p-text(Upload into /assets instead)').click();
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=upload-progress] [role=status]')?.textContent?.includes('2 of 2'),
    );
    expect((await served(site, '/assets/icons/a.svg')).status).toBe(200);
    expect((await served(site, '/assets/icons/deep/b.txt')).text).toBe('b');
    // Another folder starts with no log of this one's uploads.
    await page.locator('.breadcrumbs a ::-p-text(Site root)').click();
    await waitForText(page, 'At the site’s root');
    expect(await page.$('[data-testid=upload-progress]')).toBeNull();
  });

  it('says how to deploy when there is no deploy yet', async () => {
    const site = await newSite();
    const page = await signedIn(`/sites/${site.siteId}/deploys`);
    await page.waitForSelector('[data-testid=no-deploys]');
    const text = await page.$eval('[data-testid=no-deploys]', (el) => el.textContent ?? '');
    expect(text).toContain('drop your built site folder');
    expect(text).toContain('hostplane deploy ./dist');
    expect(text).toContain('deploy_files');
    expect(await page.evaluate(() => document.body.innerText)).not.toContain(
      'sent by a client of the deploys API',
    );
    await expectAccessible(page);
    await page.locator('[data-testid=no-deploys] a ::-p-text(Files)').click();
    await page.waitForFunction(() => location.pathname.endsWith('/files'));
  });

  it('shows the database file as a database: its real size and its SQLite screen, no rename or delete', async () => {
    const site = await newSite();
    const api = sqliteApi(rig.hp, site);
    const token = await api.token({
      path: 'data/app.sqlite',
      name: 'app',
      permissions: 'readwrite',
      requireUserAuth: false,
    });
    const origin = `http://${site.slug}.localhost:${new URL(rig.origin).port}`;
    const made = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/exec',
      { sql: 'CREATE TABLE t (x TEXT)' },
      { origin },
    );
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const listed = await api.call('GET', '/api/v1/sqlite/databases', { headers: api.master });
    const size = (listed.body.databases as Array<{ sizeBytes: number }>)[0]!.sizeBytes;
    expect(size).toBeGreaterThan(0);

    const page = await signedIn(`/sites/${site.siteId}/files?folder=data`);
    const row = await page.waitForSelector('tr[data-path="data/app.sqlite"]');
    await page.waitForFunction(
      () => !document.querySelector('tr[data-path="data/app.sqlite"]')?.textContent?.includes('—'),
    );
    const text = await row!.evaluate((el) => el.textContent ?? '');
    expect(text).toContain('SQLite database');
    expect(text).not.toContain('0 B');
    expect(await row!.$$('button')).toHaveLength(0);
    await expectAccessible(page);
    await capture(page, 'files-database');
    await page.locator('tr[data-path="data/app.sqlite"] a ::-p-text(Open in SQLite)').click();
    await page.waitForFunction(() =>
      location.pathname.endsWith(`/sqlite/${encodeURIComponent('data/app.sqlite')}/tables`),
    );
  });

  it('nudges to upload right after a site is created', async () => {
    const page = await signedIn('/');
    await page.locator('#field-slug').fill('fresh-site');
    await page.locator('button ::-p-text(Create site)').click();
    await waitForText(page, 'Site fresh-site created');
    await expectAccessible(page);
    await page.locator('a ::-p-text(upload your site)').click();
    await page.waitForFunction(() => location.pathname.endsWith('/files'));
    await waitForText(page, 'Drop your built site folder');
    await expectAccessible(page);
  });
});
