import http from 'node:http';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formElementId, htmlSnippet, type EmbedField, type EmbedForm } from '../../../src/forms/embed.js';
import { chromiumPath } from '../../support/chromium.js';

// The HTML snippet's own behaviour in Debian's headless Chromium: what it posts with JavaScript on
// and off, what it shows, and that two forms and hostile texts stay apart. The endpoint here is a
// recorder standing in for `POST /f/<uuid>` (the forms API tests drive the real one).

interface Received {
  path: string;
  contentType: string;
  accept: string;
  body: string;
}

const fields: EmbedField[] = [
  { name: 'name', label: 'Name', type: 'text', required: true, placeholder: null, options: null },
  { name: 'email', label: 'Email', type: 'email', required: true, placeholder: null, options: null },
  // Named like properties of a <form> element: the script must not trip over them.
  { name: 'action', label: 'Action', type: 'text', required: false, placeholder: null, options: null },
  { name: 'reset', label: 'Reset', type: 'text', required: false, placeholder: null, options: null },
  { name: 'topic', label: 'Topic', type: 'select', required: true, placeholder: null, options: ['A', 'B'] },
  { name: 'message', label: 'Message', type: 'textarea', required: false, placeholder: null, options: null },
];

describe('the HTML embed snippet in a real browser', () => {
  let browser: Browser;
  let server: http.Server;
  let origin = '';
  let received: Received[] = [];
  /** How the recorder answers a JSON submission. */
  let reply: { status: number; body: unknown } = { status: 200, body: { success: true } };
  const pages = new Map<string, string>();

  const form = (uuid: string, extra: Partial<EmbedForm> = {}): EmbedForm => ({
    uuid,
    name: 'Contact',
    submissionUrl: `${origin}/f/${uuid}`,
    successMessage: `Thanks from ${uuid}`,
    redirectUrl: null,
    fields,
    ...extra,
  });

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.method === 'POST') {
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        req.on('end', () => {
          const accept = req.headers.accept ?? '';
          received.push({
            path: req.url ?? '',
            contentType: req.headers['content-type'] ?? '',
            accept,
            body,
          });
          if (accept.includes('application/json')) {
            res.writeHead(reply.status, { 'content-type': 'application/json' });
            res.end(JSON.stringify(reply.body));
          } else {
            res.writeHead(200, { 'content-type': 'text/html' });
            res.end('<!doctype html><p id="stored">stored</p>');
          }
        });
        return;
      }
      const page = pages.get(req.url ?? '');
      res.writeHead(page ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page ?? 'not found');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    pages.set('/thanks', '<!doctype html><p id="thanks">thanks page</p>');
    browser = await puppeteer.launch({
      executablePath: chromiumPath(),
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });
  beforeEach(() => {
    received = [];
    reply = { status: 200, body: { success: true } };
  });

  /** Serves `snippets` on one page and opens it. */
  async function open(path: string, snippets: string[], javaScript = true): Promise<Page> {
    pages.set(path, `<!doctype html><meta charset="utf-8"><body>${snippets.join('\n<hr>\n')}</body>`);
    const page = await browser.newPage();
    await page.setJavaScriptEnabled(javaScript);
    await page.goto(`${origin}${path}`);
    return page;
  }

  async function fill(page: Page, uuid: string): Promise<string> {
    const scope = `#${formElementId(uuid)}`;
    await page.type(`${scope} [name="name"]`, 'Jane');
    await page.type(`${scope} [name="email"]`, 'jane@example.com');
    await page.type(`${scope} [name="action"]`, 'shadow');
    await page.select(`${scope} [name="topic"]`, 'B');
    await page.type(`${scope} [name="message"]`, 'Hello\nthere');
    return scope;
  }

  const statusOf = (page: Page, scope: string) =>
    page.$eval(`${scope} [data-hostplane-status]`, (el) => ({
      text: el.textContent,
      hidden: (el as HTMLElement).hidden,
      state: el.getAttribute('data-state'),
    }));

  it('with JavaScript: posts JSON with _t_start and shows the success message in its own form only', async () => {
    const page = await open('/two', [htmlSnippet(form('uuid-one')), htmlSnippet(form('uuid-two'))]);
    const shownAt = Math.floor(Date.now() / 1000);
    const scope = await fill(page, 'uuid-two');
    await page.click(`${scope} button[type="submit"]`);
    await page.waitForFunction(
      (s) => !document.querySelector(`${s} [data-hostplane-status]`)!.hasAttribute('hidden'),
      {},
      scope,
    );

    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      path: '/f/uuid-two',
      contentType: 'application/json',
      accept: 'application/json',
    });
    const body = JSON.parse(received[0]!.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      name: 'Jane',
      email: 'jane@example.com',
      action: 'shadow',
      reset: '',
      topic: 'B',
      message: 'Hello\nthere',
      _t_trap: '',
    });
    expect(body._t_start).toBeGreaterThanOrEqual(shownAt - 2);
    expect(body._t_start).toBeLessThanOrEqual(shownAt + 2);
    expect(await statusOf(page, scope)).toEqual({
      text: 'Thanks from uuid-two',
      hidden: false,
      state: 'success',
    });
    expect(await page.$eval(`${scope} [data-hostplane-field]`, (el) => (el as HTMLElement).hidden)).toBe(
      true,
    );
    const first = `#${formElementId('uuid-one')}`;
    expect(await statusOf(page, first)).toMatchObject({ hidden: true });
    expect(await page.$eval(`${first} [data-hostplane-field]`, (el) => (el as HTMLElement).hidden)).toBe(
      false,
    );
    await page.close();
  });

  it("shows the server's error message, keeps the fields and lets the visitor send again", async () => {
    reply = { status: 400, body: { error: 'Bad Request', message: 'email: must be an email address' } };
    const page = await open('/error', [htmlSnippet(form('uuid-err'))]);
    const scope = await fill(page, 'uuid-err');
    await page.click(`${scope} button[type="submit"]`);
    await page.waitForFunction(
      (s) => !document.querySelector(`${s} [data-hostplane-status]`)!.hasAttribute('hidden'),
      {},
      scope,
    );
    expect(await statusOf(page, scope)).toEqual({
      text: 'email: must be an email address',
      hidden: false,
      state: 'error',
    });
    expect(
      await page.$eval(`${scope} button[type="submit"]`, (el) => (el as HTMLButtonElement).disabled),
    ).toBe(false);
    expect(await page.$eval(`${scope} [data-hostplane-field]`, (el) => (el as HTMLElement).hidden)).toBe(
      false,
    );
    await page.close();
  });

  it('follows the redirect URL after a successful submission', async () => {
    const page = await open('/redirect', [
      htmlSnippet(form('uuid-redir', { redirectUrl: `${origin}/thanks` })),
    ]);
    const scope = await fill(page, 'uuid-redir');
    await Promise.all([page.waitForNavigation(), page.click(`${scope} button[type="submit"]`)]);
    expect(page.url()).toBe(`${origin}/thanks`);
    expect(received).toHaveLength(1);
    await page.close();
  });

  it('without JavaScript: the browser posts the form urlencoded, with an empty _t_start', async () => {
    const page = await open('/nojs', [htmlSnippet(form('uuid-nojs'))], false);
    const scope = await fill(page, 'uuid-nojs');
    await Promise.all([page.waitForNavigation(), page.click(`${scope} button[type="submit"]`)]);
    expect(await page.$eval('#stored', (el) => el.textContent)).toBe('stored');
    expect(received).toHaveLength(1);
    expect(received[0]!.contentType).toBe('application/x-www-form-urlencoded');
    expect(received[0]!.accept).not.toContain('application/json');
    const posted = Object.fromEntries(new URLSearchParams(received[0]!.body));
    expect(posted).toMatchObject({ name: 'Jane', topic: 'B', _t_trap: '', _t_start: '' });
    await page.close();
  });

  it('runs nothing hostile texts carry, and still works', async () => {
    const evil = `"><img src=x onerror="window.pwned=1"></script><script>window.pwned=2</script>`;
    const hostile = htmlSnippet({
      ...form('uuid-evil'),
      name: evil,
      successMessage: evil,
      fields: [
        { name: 'name', label: evil, type: 'text', required: true, placeholder: evil, options: null },
        { name: 'pick', label: 'Pick', type: 'select', required: false, placeholder: null, options: [evil] },
      ],
    });
    const page = await open('/evil', [hostile]);
    const scope = `#${formElementId('uuid-evil')}`;
    await page.type(`${scope} [name="name"]`, 'Jane');
    await page.select(`${scope} [name="pick"]`, evil);
    await page.click(`${scope} button[type="submit"]`);
    await page.waitForFunction(
      (s) => !document.querySelector(`${s} [data-hostplane-status]`)!.hasAttribute('hidden'),
      {},
      scope,
    );
    expect(await statusOf(page, scope)).toMatchObject({ text: evil, state: 'success' });
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.$$eval('img', (els) => els.length)).toBe(0);
    expect(JSON.parse(received[0]!.body)).toMatchObject({ name: 'Jane', pick: evil });
    await page.close();
  });
});
