import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { listMessages, readMessage } from '../../support/mailpit.js';
import { formsApi, contactFields, type FormsApi, type Json } from '../../support/forms-api.js';
import { startHostplane, upload, type TestHostplane } from '../../support/hostplane.js';
import { chromiumPath } from '../../support/chromium.js';

/** Debian's headless Chromium (installed by test/tools/build.sh); under CI its absence fails. */
/** The spam rule: sooner than 3 s after the form was shown is a bot. A person takes longer. */
const humanPause = () => new Promise((resolve) => setTimeout(resolve, 3_300));

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

describe('form snippets in a real browser (Chromium)', () => {
  let hp: TestHostplane;
  let browser: Browser;
  let api: FormsApi;
  let form: Json;
  let siteOrigin: string;
  let owner: string;

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', { worker: true, env: { SMTP_URL: inject('mailpit').smtpUrl } });
    const site = await hp.createSite('browser-forms');
    owner = site.email;
    api = formsApi(hp, site);
    form = await api.createOk({
      name: 'Contact',
      fields: contactFields,
      success_message: 'Thanks, we will write back.',
    });
    // The site's origin as the platform states it (the base URL's scheme and port): the Origin the
    // browser sends must equal it (spec 5.6's rule, forms alike).
    siteOrigin = `http://${site.slug}.localhost:8080`;
    const html = (await api.call('GET', `/api/v1/forms/${form.id}/embed/html`)).body.snippet as string;
    await upload(hp, site, 'contact.html', page('Contact', html));

    // The React snippet, bundled with the app's React the way a user's build would.
    const react = (await api.call('GET', `/api/v1/forms/${form.id}/embed/react`)).body.snippet as string;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-react-'));
    try {
      await writeFile(path.join(dir, 'ContactForm.jsx'), react);
      await writeFile(
        path.join(dir, 'main.jsx'),
        `import { createRoot } from 'react-dom/client';\nimport ContactForm from './ContactForm.jsx';\ncreateRoot(document.getElementById('root')).render(<ContactForm />);\n`,
      );
      const bundle = await build({
        entryPoints: [path.join(dir, 'main.jsx')],
        bundle: true,
        write: false,
        format: 'iife',
        jsx: 'automatic',
        nodePaths: [path.resolve('node_modules')],
        define: { 'process.env.NODE_ENV': '"production"' },
        logLevel: 'silent',
      });
      await upload(hp, site, 'app.js', bundle.outputFiles[0]!.text);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await upload(
      hp,
      site,
      'react.html',
      page('React contact', '<div id="root"></div><script src="/app.js"></script>'),
    );

    browser = await puppeteer.launch({
      executablePath: chromiumPath(),
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await hp?.stop();
  });

  /**
   * A page whose requests to the configured base URL and site hosts (http://[<slug>.]localhost:8080)
   * reach the test server's real port, unseen by the page: the snippet is used exactly as served,
   * only the address is mapped.
   */
  async function openPage(url: string, { javaScript = true } = {}): Promise<Page> {
    const tab = await browser.newPage();
    await tab.setJavaScriptEnabled(javaScript);
    await tab.setRequestInterception(true);
    tab.on('request', (req) => {
      const target = req.url().replace(/^(http:\/\/(?:[a-z0-9-]+\.)?localhost):8080\//, `$1:${hp.port}/`);
      void (target === req.url() ? req.continue() : req.continue({ url: target }));
    });
    await tab.goto(url, { waitUntil: 'load' });
    return tab;
  }

  async function fill(tab: Page, values: Record<string, string>) {
    for (const [name, value] of Object.entries(values)) {
      const tag = await tab.$eval(`[name="${name}"]`, (el) => el.tagName);
      if (tag === 'SELECT') await tab.select(`[name="${name}"]`, value);
      else await tab.type(`[name="${name}"]`, value);
    }
  }

  async function submissionFrom(name: string): Promise<Json | undefined> {
    const list = await api.call('GET', `/api/v1/forms/${form.id}/submissions?per_page=100`);
    const found = (list.body.submissions as Json[]).find((s) => s.data.name === name);
    if (!found) return undefined;
    return (await api.call('GET', `/api/v1/forms/${form.id}/submissions/${found.uuid}`)).body
      .submission as Json;
  }

  it('HTML snippet with JavaScript: a person’s submission is stored as legitimate and the success message shown', async () => {
    const tab = await openPage(`${siteOrigin}/contact.html`);
    await fill(tab, {
      name: 'Ada Person',
      email: 'ada@example.com',
      topic: 'Support',
      message: 'Hello from a browser',
    });
    await humanPause();
    await tab.click('button[type="submit"]');
    await tab.waitForSelector('[data-hostplane-status][data-state="success"]', { timeout: 10_000 });
    expect(await tab.$eval('[data-hostplane-status]', (el) => el.textContent)).toBe(
      'Thanks, we will write back.',
    );
    const stored = await submissionFrom('Ada Person');
    expect(stored).toMatchObject({
      is_spam: false,
      data: {
        name: 'Ada Person',
        email: 'ada@example.com',
        topic: 'Support',
        message: 'Hello from a browser',
      },
    });
    expect(stored!.metadata.origin).toBe(siteOrigin);
    // … and its owner is mailed through a real SMTP server.
    const mailpit = inject('mailpit');
    const mail = await eventually('the notification mail', async () => {
      const found = (await listMessages(mailpit, owner)).find((m) =>
        m.ReplyTo.some((a) => a.Address === 'ada@example.com'),
      );
      return found && readMessage(mailpit, found.ID);
    });
    expect(mail.Text).toContain('Hello from a browser');
    await tab.close();
  });

  it('HTML snippet submitted at once: scored as a bot, with the same answer', async () => {
    const tab = await openPage(`${siteOrigin}/contact.html`);
    await tab.$eval('[name="name"]', (el) => ((el as HTMLInputElement).value = 'Quick Bot'));
    await tab.$eval('[name="email"]', (el) => ((el as HTMLInputElement).value = 'bot@example.com'));
    await tab.click('button[type="submit"]');
    await tab.waitForSelector('[data-hostplane-status][data-state="success"]', { timeout: 10_000 });
    const stored = await submissionFrom('Quick Bot');
    expect(stored!.is_spam).toBe(true);
    expect(stored!.spam_reasons).toContain('submitted_too_fast');
    await tab.close();
  });

  it('HTML snippet without JavaScript: the plain post is stored and answered with a page', async () => {
    const tab = await openPage(`${siteOrigin}/contact.html`, { javaScript: false });
    await fill(tab, { name: 'No Script', email: 'noscript@example.com', message: 'Plain post' });
    await Promise.all([tab.waitForNavigation(), tab.click('button[type="submit"]')]);
    expect(await tab.$eval('body', (el) => el.textContent)).toContain('Thanks, we will write back.');
    const stored = await submissionFrom('No Script');
    expect(stored).toMatchObject({ is_spam: false, data: { message: 'Plain post' } });
    expect(stored!.spam_reasons).toContain('no_start_time');
    await tab.close();
  });

  it('React snippet: renders, submits as JSON after a human pause, and is stored', async () => {
    const tab = await openPage(`${siteOrigin}/react.html`);
    await tab.waitForSelector('form [name="email"]');
    await fill(tab, { name: 'React User', email: 'react@example.com', topic: 'Sales' });
    await humanPause();
    await tab.click('button[type="submit"]');
    await tab.waitForSelector('p[role="status"]', { timeout: 10_000 });
    expect(await tab.$eval('p[role="status"]', (el) => el.textContent)).toBe('Thanks, we will write back.');
    expect(await submissionFrom('React User')).toMatchObject({ is_spam: false, data: { topic: 'Sales' } });
    await tab.close();
  });
});
