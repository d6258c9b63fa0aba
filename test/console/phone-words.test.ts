import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAddress } from '../support/account-api.js';
import {
  capture,
  expectAccessible,
  expectNoSidewaysScroll,
  owner,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
} from '../support/console.js';
import { formsApi } from '../support/forms-api.js';
import type { TestSite } from '../support/hostplane.js';

// Words a person reads instead of the API's, and the console at a phone's width (375 px): the page
// never scrolls sideways, a table that does shows it and keeps its buttons reachable, no word is
// broken inside, the header takes at most two lines; confirmations after deleting a site and after
// signing out; pending custom domains in Settings; the operator's contact on Plans.

const CONTACT = 'mailto:hosting@example.com?subject=Plans';

describe('console: words and phone width (Chromium)', () => {
  let rig: ConsoleRig;
  let who: { email: string; password: string };
  let site: TestSite;
  beforeAll(async () => {
    rig = await startConsole({ env: { HOSTPLANE_PLANS_CONTACT: CONTACT } });
    who = await owner(rig, 'a-rather-long-owner-address@example.com');
    site = await rig.hp.createSite('phone-words-site', { email: who.email });
    await formsApi(rig.hp, site).createOk();
  }, 120_000);
  afterAll(async () => rig?.close());

  const phone = async () => {
    const page = await rig.page({ phone: true });
    await page.setViewport({ width: 375, height: 812, isMobile: true, hasTouch: true });
    await page.setExtraHTTPHeaders({ 'x-forwarded-for': newAddress() });
    await signIn(rig, page, who);
    return page;
  };

  /** Words split across two lines inside themselves (not at a space, hyphen, slash or @). */
  const brokenWords = (page: Page) =>
    page.evaluate(() => {
      const broken: string[] = [];
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const parent = node.parentElement;
        if (!parent || parent.closest('code, pre, textarea, .sql-text, .visually-hidden, .skip')) continue;
        if (parent.getClientRects().length === 0) continue;
        const text = node.textContent ?? '';
        for (const match of text.matchAll(/[^\s\-/@.·:,]+/g)) {
          const range = document.createRange();
          range.setStart(node, match.index);
          range.setEnd(node, match.index + match[0].length);
          const tops = new Set(
            [...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)),
          );
          if (tops.size > 1) broken.push(match[0]);
        }
      }
      return broken;
    });

  /** Lines the top bar takes: distinct tops of its links and buttons. */
  const headerLines = (page: Page) =>
    page.$$eval('.topbar a, .topbar button, .topbar .who', (els) => {
      const tops = els
        .filter((el) => el.getClientRects().length > 0)
        .map((el) => el.getBoundingClientRect().top);
      return new Set(tops.map((t) => Math.round(t / 8))).size;
    });

  /** Every table that is wider than its box says so; each of its buttons comes fully into view. */
  const expectReachableTables = async (page: Page) => {
    const wraps = await page.$$('.table-wrap');
    expect(wraps.length).toBeGreaterThan(0);
    for (const wrap of wraps) {
      const state = await wrap.evaluate((el) => ({
        overflows: el.scrollWidth > el.clientWidth + 1,
        more: el.getAttribute('data-more') ?? '',
      }));
      if (state.overflows)
        expect(state.more, 'an overflowing table shows that it scrolls').toContain('right');
      for (const button of await wrap.$$('button')) {
        await button.evaluate((el) => el.scrollIntoView({ block: 'center', inline: 'nearest' }));
        const box = await button.evaluate((el) => {
          const r = el.getBoundingClientRect();
          return { left: r.left, right: r.right, width: innerWidth };
        });
        expect(box.left, 'a table’s button is reachable').toBeGreaterThanOrEqual(0);
        expect(box.right).toBeLessThanOrEqual(box.width + 0.5);
      }
      if (state.overflows) {
        await wrap.evaluate((el) => el.scrollTo({ left: el.scrollWidth }));
        await page.waitForFunction((el) => (el.getAttribute('data-more') ?? '').includes('left'), {}, wrap);
      }
    }
  };

  it('at 375 px: no sideways page, the header on at most two lines, no word broken inside', async () => {
    const page = await phone();
    for (const path of [
      '/',
      `/sites/${site.siteId}/keys`,
      `/sites/${site.siteId}/forms`,
      '/plans',
      '/account',
    ]) {
      await page.goto(rig.url(path));
      await page.waitForSelector('#page-title');
      await page.waitForFunction(() => !document.title.includes('…'));
      await page.waitForNetworkIdle({ idleTime: 300 });
      await expectNoSidewaysScroll(page);
      expect(await headerLines(page), `header lines at ${path}`).toBeLessThanOrEqual(2);
      expect(await brokenWords(page), `words broken at ${path}`).toEqual([]);
      if (await page.$('.table-wrap')) await expectReachableTables(page);
      await expectAccessible(page);
      await capture(page, `phone${path.replace(/\W+/g, '-')}`);
    }
  }, 120_000);

  it('the subdomain rule in words, and a month by its name', async () => {
    const page = await phone();
    await page.locator('#field-slug').fill('Bad--Slug');
    await page.locator('form.row button[type=submit]').click();
    await page.waitForSelector('[role=alert]');
    const said = await page.$eval('[role=alert]', (el) => el.textContent ?? '');
    expect(said).toMatch(/^The subdomain can have lower-case letters/);
    expect(said).not.toMatch(/slug must/);
    await page.goto(rig.url(`/sites/${site.siteId}/forms`));
    await waitForText(page, 'Submissions in ');
    const month = new Date().toLocaleString('en', { month: 'long', year: 'numeric', timeZone: 'UTC' });
    await waitForText(page, `Submissions in ${month}`);
    expect(await page.evaluate(() => document.body.innerText)).not.toMatch(/Submissions in \d{4}-\d{2}/);
  });

  it('Plans shows the operator’s contact instead of a dead end', async () => {
    const page = await phone();
    await page.goto(rig.url('/plans'));
    await page.waitForSelector('.plans-contact a');
    expect(await page.$eval('.plans-contact a', (a) => [a.getAttribute('href'), a.textContent])).toEqual([
      CONTACT,
      'hosting@example.com',
    ]);
    const plans = await rig.hp.request('/api/v1/account/plans', {
      headers: { cookie: (await page.cookies(rig.origin)).map((c) => `${c.name}=${c.value}`).join('; ') },
    });
    expect(((await plans.json()) as { contact: string }).contact).toBe(CONTACT);
  });

  it('Settings shows a pending custom domain as pending, not “none”', async () => {
    const page = await phone();
    await page.goto(rig.url(`/sites/${site.siteId}/domains`));
    await page.locator('#field-hostname').fill('www.pending-example.com');
    await page.locator('form button[type=submit]').click();
    await waitForText(page, 'is pending');
    await page.goto(rig.url(`/sites/${site.siteId}/settings`));
    await waitForText(page, 'www.pending-example.com (pending');
    expect(await page.$eval('.domains-fact', (el) => el.textContent)).not.toBe('none');
    await expectAccessible(page);
  });

  it('says so after deleting a site and after signing out', async () => {
    const doomed = await rig.hp.createSite('doomed-site', { email: who.email });
    const page = await phone();
    await page.goto(rig.url(`/sites/${doomed.siteId}/settings`));
    await page.locator('#field-confirm-slug').fill('doomed-site');
    await page.locator('.danger-zone button[type=submit]').click();
    await page.waitForFunction(() => document.title.startsWith('Your sites'));
    await page.waitForSelector('.alert-success[role=status]');
    expect(await page.$eval('.alert-success[role=status]', (el) => el.textContent)).toMatch(
      /^Site doomed-site deleted/,
    );
    await expectAccessible(page);
    await page.locator('.topbar button::-p-text(Sign out)').click();
    await page.waitForFunction(() => location.pathname === '/console/sign-in');
    await page.waitForSelector('.alert-success[role=status]');
    expect(await page.$eval('.alert-success[role=status]', (el) => el.textContent)).toBe(
      'You are signed out.',
    );
    await expectAccessible(page);
  });
});
