import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { chromiumPath } from '../../support/chromium.js';

/** Debian's headless Chromium (installed by test/tools/build.sh); under CI its absence fails. */
describe('the API host for people: / and /docs', () => {
  let hp: TestHostplane;
  let browser: Browser;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    browser = await puppeteer.launch({
      executablePath: chromiumPath(),
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await hp?.stop();
  });

  it('GET / names the service and links the reference and the document', async () => {
    const res = await hp.request('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('Hostplane API');
    expect(html).toContain('href="/docs"');
    expect(html).toContain('href="/console"');
    expect(html).toContain('href="/api/v1/openapi.json"');
  });

  it('/docs renders every operation of the document in a real browser, with no outside request', async () => {
    const spec = (await (await hp.request('/api/v1/openapi.json')).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const operations = Object.values(spec.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    const page = await browser.newPage();
    const foreign: string[] = [];
    const pageErrors: string[] = [];
    page.on('request', (req) => {
      if (!req.url().startsWith(hp.url) && !req.url().startsWith('data:')) foreign.push(req.url());
    });
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    await page.goto(`${hp.url}/docs`, { waitUntil: 'networkidle0' });
    await page.waitForSelector('.opblock', { timeout: 20_000 });
    const rendered = await page.$$eval('.opblock-summary-path', (nodes) => nodes.map((n) => n.textContent));
    expect(rendered.length).toBe(operations);
    expect(rendered.join(' ')).toContain('/api/v1/files/upload');
    expect(foreign).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
