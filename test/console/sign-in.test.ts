import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  capture,
  expectAccessible,
  owner,
  signIn,
  startConsole,
  waitForText,
  type ConsoleRig,
  expectNoSidewaysScroll,
} from '../support/console.js';

describe('console: sign-in and the sites list (Chromium)', () => {
  let rig: ConsoleRig;
  beforeAll(async () => {
    rig = await startConsole();
  }, 120_000);
  afterAll(async () => rig?.close());

  it('sends a visitor who is not signed in to the sign-in screen, and back after signing in', async () => {
    const who = await owner(rig, 'first-owner@example.com');
    const page = await rig.page();
    await page.goto(rig.url('/plans'));
    await page.waitForFunction(() => location.pathname === '/console/sign-in');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/plans');
    await expectAccessible(page);
    await capture(page, 'sign-in');

    await page.locator('#field-email').fill(who.email);
    await page.locator('#field-password').fill('not the password');
    await page.locator('button[type=submit]').click();
    await page.waitForSelector('[role=alert]');
    const refused = await page.$eval('[role=alert]', (el) => el.textContent);
    expect(refused).toMatch(/email or password/i);

    await page.locator('#field-password').fill(who.password);
    await page.locator('button[type=submit]').click();
    await page.waitForFunction(() => location.pathname === '/console/plans');
    await waitForText(page, 'You are on the');
  });

  it('creates a site from the sites list and shows its key once, usable at phone width', async () => {
    const who = await owner(rig, 'second-owner@example.com');
    const page: Page = await rig.page({ phone: true });
    await signIn(rig, page, who);
    await page.locator('#field-slug').fill('console-made');
    await page.locator('form.row button[type=submit]').click();
    await waitForText(page, 'Site console-made created');
    const key = await page.$eval('.secret textarea', (el) => (el as HTMLTextAreaElement).value);
    expect(key).toMatch(/^hp_/);
    await waitForText(page, 'console-made.localhost');
    // The key works on the public API.
    const res = await rig.hp.request('/api/v1/hosting-info', { headers: { 'x-api-key': key } });
    expect(res.status).toBe(200);
    // Nothing wider than the phone's screen.
    await expectNoSidewaysScroll(page);
    await expectAccessible(page);
    await capture(page, 'sites-phone');
  });
});
