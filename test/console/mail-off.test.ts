import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { newAddress, PASSWORD } from '../support/account-api.js';
import {
  capture,
  expectAccessible,
  owner,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';
import { mailedLink } from '../support/console-mail.js';
import { formsApi, type Json } from '../support/forms-api.js';

// Mail, told truthfully: a server without SMTP says so on every screen that would promise a mail
// (and in its log, once, at start); with SMTP (Mailpit) the same screens promise it and it comes.

/** The server's log lines, parsed. */
function logSink() {
  const lines: Json[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as Json);
      done();
    },
  });
  return { lines, logger: createLogger('info', stream) };
}

const text = (page: Awaited<ReturnType<ConsoleRig['page']>>) => page.evaluate(() => document.body.innerText);

describe('console: a server without SMTP says mail is off (Chromium)', () => {
  let rig: ConsoleRig;
  const log = logSink();
  beforeAll(async () => {
    rig = await startConsole({ env: { SMTP_URL: '', HOSTPLANE_SIGNUP: 'open' }, logger: log.logger });
  }, 120_000);
  afterAll(async () => rig?.close());

  it('logs one warning at start that mail is off', () => {
    const warnings = log.lines.filter((l) => l.level === 40 && /mail is off/.test(String(l.msg)));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/SMTP_URL is not set/);
    expect(JSON.stringify(log.lines)).not.toMatch(/smtp:\/\//);
  });

  it('the API says whether mail is on, signed out and signed in, and promises no mail', async () => {
    const mode = await rig.hp.request('/api/v1/account/signup-mode');
    expect(await mode.json()).toEqual({ success: true, signup: 'open', mail: false });
    const reset = await rig.hp.request('/api/v1/account/password-reset', {
      method: 'POST',
      json: { email: 'nobody@example.com' },
      headers: { 'x-forwarded-for': newAddress() },
    });
    expect(reset.status).toBe(202);
    const { message } = (await reset.json()) as { message: string };
    expect(message).toMatch(/sends no mail/);
    expect(message).not.toMatch(/on its way/);
  });

  it('forgot password: no form, no “on its way”, but what to do', async () => {
    const page = await rig.page();
    await page.goto(rig.url('/forgot'));
    await waitForText(page, 'This server sends no mail');
    const words = await text(page);
    expect(words).toContain('ask the operator');
    expect(words).not.toMatch(/on its way|we mail you/i);
    expect(await page.$('#field-email')).toBeNull();
    await expectAccessible(page);
    await capture(page, 'forgot-mail-off');
  });

  it('sign-up and the account page do not promise a verification mail', async () => {
    const email = 'no-mail-newcomer@example.com';
    const page = await rig.page();
    await page.setExtraHTTPHeaders({ 'x-forwarded-for': newAddress() });
    await page.goto(rig.url('/sign-up'));
    await waitForText(page, 'This server sends no mail');
    await expectAccessible(page);
    await page.locator('#field-email').fill(email);
    await page.locator('#field-password').fill(PASSWORD);
    await page.locator('button[type=submit]').click();
    await waitForText(page, 'Your account is created');
    expect(await text(page)).not.toMatch(/on its way|Follow it/);

    await signIn(rig, page, { email, password: PASSWORD });
    await page.goto(rig.url('/account'));
    await waitForText(page, 'Not verified yet');
    await waitForText(page, 'no verification link can reach you');
    expect(await page.$('::-p-text(Mail me a new link)')).toBeNull();
    expect(await text(page)).not.toContain('Follow the link we mailed you');
    await expectAccessible(page);
    await capture(page, 'account-mail-off');
  });

  it('a form’s notification: stored and listed, not “mailed to”', async () => {
    const who = await owner(rig, 'forms-no-mail@example.com');
    const site = await rig.hp.createSite('forms-no-mail', { email: who.email });
    const form = await formsApi(rig.hp, site).createOk();
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${site.siteId}/forms/${form.id}`));
    await waitForText(page, 'not mailed to');
    const words = await text(page);
    expect(words).not.toMatch(/is mailed to|are mailed to/);
    expect(words).toContain('This server sends no mail');
    await expectAccessible(page);
    await capture(page, 'form-notification-mail-off');
  });
});

describe('console: a server with SMTP promises the mail and sends it (Chromium, Mailpit)', () => {
  let rig: ConsoleRig;
  const log = logSink();
  beforeAll(async () => {
    rig = await startConsole({ worker: true, logger: log.logger });
  }, 120_000);
  afterAll(async () => rig?.close());

  it('no mail-off warning; the API says mail is on', async () => {
    expect(log.lines.filter((l) => /mail is off/.test(String(l.msg)))).toEqual([]);
    const mode = await rig.hp.request('/api/v1/account/signup-mode');
    expect(await mode.json()).toMatchObject({ mail: true });
  });

  it('forgot password offers the form and the link arrives', async () => {
    const who = await owner(rig, 'mail-on-owner@example.com');
    const page = await rig.page();
    await page.setExtraHTTPHeaders({ 'x-forwarded-for': newAddress() });
    await page.goto(rig.url('/forgot'));
    await page.waitForSelector('#field-email');
    expect(await text(page)).not.toContain('sends no mail');
    await page.locator('#field-email').fill(who.email);
    await page.locator('button[type=submit]').click();
    await waitForText(page, 'is on its way');
    await expectAccessible(page);
    expect(await mailedLink(rig, who.email, 'Reset your Hostplane password')).toContain(
      '/console/reset#token=',
    );
  });

  it('a form’s notification says where submissions are mailed', async () => {
    const who = await owner(rig, 'forms-mail-on@example.com');
    const site = await rig.hp.createSite('forms-mail-on', { email: who.email });
    const form = await formsApi(rig.hp, site).createOk();
    const page = await rig.page();
    await signIn(rig, page, who);
    await page.goto(rig.url(`/sites/${site.siteId}/forms/${form.id}`));
    await waitForText(page, 'is mailed to');
    expect(await text(page)).not.toContain('sends no mail');
    await expectAccessible(page);
  });
});
