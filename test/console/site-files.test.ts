import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ElementHandle, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, invitedOwner, PASSWORD } from '../support/account-api.js';
import { eventually } from '../support/eventually.js';
import { metricValue, scrapeMetrics } from '../support/hostplane.js';
import {
  capture,
  expectAccessible,
  signIn,
  startConsole,
  tabTo,
  waitForText,
  type ConsoleRig,
  expectNoSidewaysScroll,
} from '../support/console.js';

/**
 * The file browser in Chromium: a folder uploaded through the real `webkitdirectory` input, a
 * folder dropped as the browser delivers a real drop (DevTools drag data naming a directory, so
 * the page walks real FileSystemEntry objects), a drop of plain files with one refused, then
 * create folder, rename/move and delete — each checked on the site's own host.
 */
describe('console: the site file browser (Chromium)', () => {
  let rig: ConsoleRig;
  let dir: string;
  let siteId: number;
  let slug: string;
  let who: { email: string; password: string };

  beforeAll(async () => {
    rig = await startConsole();
    dir = await mkdtemp(path.join(os.tmpdir(), 'console-files-'));
    const owner = await invitedOwner(rig.hp, 'files-owner@example.com');
    who = { email: owner.email, password: PASSWORD };
    const created = await call(rig.hp, 'POST', '/api/v1/account/sites', {
      json: { slug: 'filebrowser' },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    siteId = (created.body.site as { id: number }).id;
    slug = 'filebrowser';
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The site's file as its visitors get it. */
  const served = async (sitePath: string) => {
    const res = await rig.hp.request(`/${sitePath}`, { host: `${slug}.localhost` });
    return { status: res.status, text: await res.text() };
  };

  const tree = async (root: string, files: Record<string, string>) => {
    for (const [rel, content] of Object.entries(files)) {
      const file = path.join(root, rel);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, content);
    }
    return root;
  };

  const waitForUpload = async (page: Page, text: string) => {
    await page.waitForFunction(
      (t) => {
        const box = document.querySelector('[data-testid=upload-progress]');
        return box?.textContent?.includes(t) && box.querySelector('[role=status]')?.textContent;
      },
      { timeout: 30_000 },
      text,
    );
  };

  /** A folder asks first whether it becomes the site (a deploy) or goes into the current folder. */
  const uploadHere = async (page: Page) => {
    await page.waitForSelector('[data-testid=folder-choice]');
    await page.locator('[data-testid=folder-choice] button ::-p-text(Upload into)').click();
  };

  it('uploads a whole folder into the current one through the folder picker, with progress, and serves it', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}`));
    await waitForText(page, 'This folder is empty');
    await expectAccessible(page);

    const site = await tree(path.join(dir, 'site'), {
      'index.html': '<!doctype html><title>Home</title><h1>Uploaded folder</h1>',
      'css/site.css': 'body { color: teal }',
      'img/dot.svg': '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>',
    });
    const input = (await page.$('[data-testid=upload-folder]')) as ElementHandle<HTMLInputElement>;
    expect(await input.evaluate((el) => el.webkitdirectory)).toBe(true);
    await input.uploadFile(site);
    await uploadHere(page);
    await waitForUpload(page, '3 of 3 files');
    const progress = await page.$eval('progress', (el) => [el.value, el.max]);
    expect(progress[0]).toBe(progress[1]);
    await capture(page, 'files-upload-progress');

    expect(await served('site/index.html')).toMatchObject({
      status: 200,
      text: expect.stringContaining('Uploaded folder'),
    });
    expect((await served('site/css/site.css')).text).toBe('body { color: teal }');
    expect((await served('site/img/dot.svg')).status).toBe(200);
    // The list refreshed: the new folder is there, and the usage bar counts the files.
    await page.waitForSelector('table.files a ::-p-text(site/)');
    await page.waitForFunction(
      () =>
        document.querySelector('[role=progressbar][aria-label=Files]')?.getAttribute('aria-valuenow') === '3',
    );
  });

  it('walks folders, back and forward, and takes a dropped folder with its structure', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/files`));
    await page.locator('table.files a ::-p-text(site/)').click();
    await page.waitForFunction(() => location.search === '?folder=site');
    await page.waitForSelector('table.files a ::-p-text(css/)');
    await waitForText(page, 'In /site');
    await page.locator('table.files a ::-p-text(css/)').click();
    await waitForText(page, 'In /site/css');
    await page.waitForSelector('table.files a ::-p-text(site.css)');
    await page.goBack();
    await waitForText(page, 'In /site\n');
    await page.goForward();
    await waitForText(page, 'In /site/css');
    await page.locator('.breadcrumbs a ::-p-text(site)').click();
    await waitForText(page, 'In /site\n');

    // A real drop: DevTools hands Chromium a directory path, as the OS would on a drag from a file manager.
    const docs = await tree(path.join(dir, 'docs'), { 'a.txt': 'alpha', 'deep/b.txt': 'beta' });
    const zone = await page.$('[data-testid=dropzone]');
    const box = (await zone!.boundingBox())!;
    const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
    const session = await page.createCDPSession();
    const data = { items: [], files: [docs], dragOperationsMask: 1 };
    await session.send('Input.dispatchDragEvent', { type: 'dragEnter', ...at, data });
    await session.send('Input.dispatchDragEvent', { type: 'dragOver', ...at, data });
    await session.send('Input.dispatchDragEvent', { type: 'drop', ...at, data });
    await uploadHere(page);
    await waitForUpload(page, '2 of 2 files');
    expect(await served('site/docs/a.txt')).toEqual({ status: 200, text: 'alpha' });
    expect(await served('site/docs/deep/b.txt')).toEqual({ status: 200, text: 'beta' });
    await page.waitForSelector('table.files a ::-p-text(docs/)');

    // The Files tab is a link to the same screen without `?folder=`: it goes back to the root.
    await page.locator('nav.tabs a ::-p-text(Files)').click();
    await page.waitForFunction(() => location.search === '');
    await waitForText(page, 'At the site’s root');
    await page.waitForSelector('table.files a ::-p-text(site/)');

    // A folder link is a real link: Ctrl+click opens it in a new tab and leaves this one where it is.
    const opened = rig.browser.waitForTarget((t) => t.url().endsWith(`/files?folder=site`));
    await page.keyboard.down('Control');
    await page.locator('table.files a ::-p-text(site/)').click();
    await page.keyboard.up('Control');
    await (await (await opened).page())?.close();
    expect(await page.evaluate(() => location.search)).toBe('');
    await waitForText(page, 'At the site’s root');
  });

  it('drops plain files: a refused one says why in words, the others still go', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/files?folder=site`));
    await waitForText(page, 'In /site');
    // A drop whose DataTransfer carries files made in the page (what a script-driven drop can carry).
    await page.$eval('[data-testid=dropzone]', (zone) => {
      const data = new DataTransfer();
      data.items.add(new File(['hello'], 'hello.txt', { type: 'text/plain' }));
      data.items.add(new File(['MZ'], 'tool.exe', { type: 'application/octet-stream' }));
      data.items.add(new File(['{"a":1}'], 'data.json', { type: 'application/json' }));
      // A video goes through POST /api/v1/videos/upload (multipart).
      data.items.add(new File(['not really a movie'], 'clip.mp4', { type: 'video/mp4' }));
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await waitForUpload(page, '3 of 4 files');
    await waitForText(page, 'failed: path has the extension .exe, which is not allowed');
    expect(await served('site/hello.txt')).toEqual({ status: 200, text: 'hello' });
    expect((await served('site/data.json')).status).toBe(200);
    expect(await served('site/clip.mp4')).toEqual({ status: 200, text: 'not really a movie' });

    // "Upload files" (multiple) from the picker.
    const one = await tree(path.join(dir, 'picked'), { 'about.html': '<p>about</p>', 'notes.txt': 'n' });
    const input = (await page.$('[data-testid=upload-files]')) as ElementHandle<HTMLInputElement>;
    await input.uploadFile(path.join(one, 'about.html'), path.join(one, 'notes.txt'));
    await waitForUpload(page, '2 of 2 files');
    expect(await served('site/about.html')).toEqual({ status: 200, text: '<p>about</p>' });
  });

  it('creates a folder, renames and moves a file, deletes a file and a folder', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/files?folder=site`));
    await page.waitForSelector('table.files a ::-p-text(about.html)');
    await expectAccessible(page);
    await capture(page, 'files');

    await page.locator('#field-new-folder').fill('drafts');
    await page.locator('form.create-folder button[type=submit]').click();
    await waitForText(page, 'Folder /site/drafts created');
    await page.waitForSelector('table.files a ::-p-text(drafts/)');

    // Move about.html into another folder under a new name.
    await page.locator('button ::-p-text(Rename or move about.html)').click();
    const field = await page.waitForSelector('#field-new-path');
    expect(await field!.evaluate((el) => (el as HTMLInputElement).value)).toBe('site/about.html');
    // Focus moves to the form's field (keyboard users land where the change is).
    await page.waitForFunction(() => document.activeElement?.id === 'field-new-path');
    await page.$eval('#field-new-path', (el) => ((el as HTMLInputElement).value = ''));
    await page.locator('#field-new-path').fill('moved/about-us.html');
    await page.locator('form button[type=submit] ::-p-text(Save)').click();
    await waitForText(page, 'Renamed site/about.html to moved/about-us.html');
    expect(await served('moved/about-us.html')).toEqual({ status: 200, text: '<p>about</p>' });
    expect((await served('site/about.html')).status).toBe(404);

    await page.locator('button ::-p-text(Delete hello.txt)').click();
    await waitForText(page, 'Deleted site/hello.txt');
    expect((await served('site/hello.txt')).status).toBe(404);

    await page.locator('button ::-p-text(Delete docs)').click();
    await waitForText(page, 'Deleted folder site/docs (2 files)');
    expect((await served('site/docs/a.txt')).status).toBe(404);

    // A refused rename says why in the registry's words.
    await page.locator('button ::-p-text(Rename or move data.json)').click();
    await page.waitForSelector('#field-new-path');
    await page.$eval('#field-new-path', (el) => ((el as HTMLInputElement).value = ''));
    await page.locator('#field-new-path').fill('site/data.exe');
    await page.locator('form button[type=submit] ::-p-text(Save)').click();
    await waitForText(page, 'new_path has the extension .exe, which is not allowed');

    // Escape closes the form and gives the focus back to the button that opened it.
    await page.locator('#field-new-path').click();
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('#field-new-path'));
    await page.waitForFunction(() =>
      document.activeElement?.textContent?.includes('Rename or move data.json'),
    );
  });

  it('uploads by keyboard alone, and says when it is done', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/files?folder=site`));
    await waitForText(page, 'In /site');
    const folder = await tree(path.join(dir, 'keyboard'), { 'by-keyboard.txt': 'typed' });
    // Enter on the button opens the picker: the input's click is recorded (and the native dialog,
    // which headless Chromium under load does not always raise, kept shut), then files are chosen.
    await page.$eval('[data-testid=upload-files]', (input) =>
      input.addEventListener('click', (event) => {
        event.preventDefault();
        (input as HTMLInputElement).dataset.opened = 'yes';
      }),
    );
    await tabTo(page, 'Upload files');
    await page.keyboard.press('Enter');
    const input = (await page.waitForSelector(
      '[data-testid=upload-files][data-opened=yes]',
    )) as ElementHandle<HTMLInputElement>;
    await input.uploadFile(path.join(folder, 'by-keyboard.txt'));
    // The result is announced in a live region, and the focus is still on the button that started it.
    await page.waitForFunction(() =>
      document
        .querySelector('[data-testid=upload-progress] [role=status]')
        ?.textContent?.includes('Upload finished: 1 of 1 files uploaded.'),
    );
    expect(await served('site/by-keyboard.txt')).toEqual({ status: 200, text: 'typed' });
    await page.waitForSelector('table.files a ::-p-text(by-keyboard.txt)');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Upload files');
  });

  it('keeps the keyboard focus where the user moved it when the site’s name arrives late', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    // The site's own record is held back until the user has tabbed into the screen.
    await page.setRequestInterception(true);
    const heldSite: Array<() => Promise<void>> = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === `/api/v1/account/sites/${siteId}`)
        heldSite.push(() => request.continue());
      else void request.continue();
    });
    await page.goto(rig.url(`/sites/${siteId}/files`));
    await waitForText(page, 'At the site’s root');
    await page.waitForFunction(() => !document.body.innerText.includes('(loading…)'));
    await eventually('the site request held', async () => heldSite.length > 0 || undefined);
    expect(await page.evaluate(() => document.title)).toMatch(/^…: Files/);
    await tabTo(page, 'Upload files');
    for (const release of heldSite) await release();
    await page.waitForFunction(() => document.title.startsWith('filebrowser: Files'));
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Upload files');
  });

  it('stops an upload when the user leaves the file browser', async () => {
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/files?folder=site`));
    await waitForText(page, 'In /site');
    // Upload requests are held in the browser, never answered, so the batch is mid-way when the user leaves.
    await page.setRequestInterception(true);
    const held: string[] = [];
    const cut: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/v1/files/upload')) held.push(request.url());
      else void request.continue();
    });
    page.on('requestfailed', (request) => {
      if (request.url().endsWith('/api/v1/files/upload')) cut.push(request.failure()?.errorText ?? '');
    });
    const names = Array.from({ length: 12 }, (_, i) => `left-${i}.txt`);
    const folder = await tree(path.join(dir, 'left'), Object.fromEntries(names.map((name) => [name, name])));
    const input = (await page.$('[data-testid=upload-files]')) as ElementHandle<HTMLInputElement>;
    await input.uploadFile(...names.map((name) => path.join(folder, name)));
    await page.waitForFunction(() => document.body.innerText.includes('0 of 12 files'));
    await eventually('eight uploads in flight', async () => held.length === 8 || undefined);

    await page.locator('nav.tabs a ::-p-text(Deploys)').click();
    await waitForText(page, 'No deploys yet');
    // The eight in flight were cut off by the page, and no other file was sent.
    await eventually('the uploads in flight cut off', async () => cut.length === 8 || undefined);
    expect(held).toHaveLength(8);
    for (const name of names) expect((await served(`site/${name}`)).status).toBe(404);
  });

  it('comes back to the same folder after signing in', async () => {
    const page = await rig.page();
    await page.goto(rig.url(`/sites/${siteId}/files?folder=site`));
    await page.waitForFunction(() => location.pathname === '/console/sign-in');
    await page.locator('#field-email').fill(who.email);
    await page.locator('#field-password').fill(who.password);
    await page.locator('button[type=submit]').click();
    await page.waitForFunction(() => location.pathname.endsWith('/files'));
    expect(new URL(page.url()).search).toBe('?folder=site');
    await waitForText(page, 'In /site');
  });

  it('is readable at phone width', async () => {
    const page = await rig.page({ phone: true });
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${siteId}/files?folder=site`));
    await page.waitForSelector('table.files a ::-p-text(index.html)');
    await expectNoSidewaysScroll(page);
    await expectAccessible(page);
    await capture(page, 'files-phone');
  });
});

describe('console: uploads under the server’s default upload byte budget', () => {
  let rig: ConsoleRig;
  let dir: string;
  beforeAll(async () => {
    rig = await startConsole({
      env: {
        HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: undefined,
        HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: undefined,
      },
    });
    dir = await mkdtemp(path.join(os.tmpdir(), 'console-caps-'));
  }, 120_000);
  afterAll(async () => {
    await rig?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('sends a folder’s small files side by side: every file arrives, none refused', async () => {
    const owner = await invitedOwner(rig.hp, 'caps-owner@example.com');
    const created = await call(rig.hp, 'POST', '/api/v1/account/sites', {
      json: { slug: 'capped' },
      headers: owner.bearer,
    });
    const siteId = (created.body.site as { id: number }).id;
    const folder = path.join(dir, 'pages');
    const names = Array.from({ length: 8 }, (_, i) => `page-${i}.html`);
    await mkdir(folder, { recursive: true });
    for (const name of names) await writeFile(path.join(folder, name), `<p>${name}</p>`);

    const refusals = async () =>
      metricValue(await scrapeMetrics(rig.hp), 'hostplane_upload_refusals_total', { cap: 'site' }) +
      metricValue(await scrapeMetrics(rig.hp), 'hostplane_upload_refusals_total', { cap: 'process' });
    const refusedBefore = await refusals();
    const page = await rig.page();
    await signIn(rig, page, { email: owner.email, password: PASSWORD });
    await page.goto(rig.url(`/sites/${siteId}`));
    await waitForText(page, 'This folder is empty');
    const input = (await page.$('[data-testid=upload-folder]')) as ElementHandle<HTMLInputElement>;
    await input.uploadFile(folder);
    await page.waitForSelector('[data-testid=folder-choice]');
    await page.locator('[data-testid=folder-choice] button ::-p-text(Upload into)').click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid=upload-progress] [role=status]')?.textContent,
      { timeout: 60_000 },
    );
    const summary = await page.$eval('[data-testid=upload-progress]', (el) => el.textContent ?? '');
    expect(summary).toContain('8 of 8 files');
    expect(summary).not.toContain('failed');
    expect(await refusals()).toBe(refusedBefore);
    for (const name of names) {
      const res = await rig.hp.request(`/pages/${name}`, { host: 'capped.localhost' });
      expect(await res.text()).toBe(`<p>${name}</p>`);
    }
  }, 90_000);
});
