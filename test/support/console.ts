import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { expect, inject, onTestFailed } from 'vitest';
import type { Logger } from '../../src/observability/logger.js';
import { invitedOwner, PASSWORD } from './account-api.js';
import { chromiumPath } from './chromium.js';
import { startHostplane, type TestHostplane } from './hostplane.js';
import { freePort } from './procs.js';

/**
 * The console in Debian's real Chromium against a real `hostplane serve` (in-process, embedded
 * defaults or PostgreSQL + MinIO). The base URL is the server's real address, so the browser's
 * Origin is the API's own (cookie sessions are refused from any other) and site hosts
 * (`<slug>.localhost:<port>`) resolve to loopback as Chromium resolves every `*.localhost`.
 */
export interface ConsoleRig {
  hp: TestHostplane;
  browser: Browser;
  /** `http://localhost:<port>` */
  origin: string;
  url(pathBelowConsole: string): string;
  /** A new page (its own cookies) at phone or desktop width; a failing test keeps its screenshot. */
  page(options?: { phone?: boolean }): Promise<Page>;
  close(): Promise<void>;
}

export const RESULTS_DIR = path.resolve('test-results', 'console');

export async function startConsole(
  options: {
    backend?: 'pglite+fs' | 'postgres+s3';
    env?: NodeJS.ProcessEnv;
    /** Runs the worker loops too (the outbox sends mail to Mailpit). */
    worker?: boolean;
    /** The server's logger (default: silent). */
    logger?: Logger;
  } = {},
): Promise<ConsoleRig> {
  const port = await freePort();
  const origin = `http://localhost:${port}`;
  const hp = await startHostplane(options.backend ?? 'pglite+fs', {
    env: {
      PORT: String(port),
      HOSTPLANE_BASE_URL: origin,
      SMTP_URL: inject('mailpit').smtpUrl,
      ...options.env,
    },
    ...(options.worker ? { worker: true } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const browser = await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const pages: Page[] = [];
  return {
    hp,
    browser,
    origin,
    url: (below) => `${origin}/console${below}`,
    async page({ phone = false } = {}) {
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      await page.setViewport(
        phone ? { width: 390, height: 844, isMobile: true, hasTouch: true } : { width: 1280, height: 900 },
      );
      // The console's CSP stays on (a test must see what it refuses): every violation is recorded
      // and expectAccessible fails on one. axe runs through DevTools evaluation, which CSP allows.
      await page.evaluateOnNewDocument(() => {
        const seen: string[] = [];
        (window as unknown as { __cspViolations: string[] }).__cspViolations = seen;
        document.addEventListener('securitypolicyviolation', (e) =>
          seen.push(`${e.violatedDirective} ${e.blockedURI}`),
        );
      });
      page.on('dialog', (dialog) => void dialog.accept());
      pages.push(page);
      onTestFailed(async ({ task }) => {
        await mkdir(RESULTS_DIR, { recursive: true });
        const file = path.join(RESULTS_DIR, `${task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 80)}.png`);
        await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
        console.error(`screenshot of the failed test: ${file}`);
      });
      return page;
    },
    async close() {
      await browser.close().catch(() => undefined);
      await hp.stop();
    },
  };
}

/** An owner invited by the operator, who set a password: what the sign-in screen needs. */
export async function owner(rig: ConsoleRig, email: string) {
  await invitedOwner(rig.hp, email);
  return { email, password: PASSWORD };
}

/** Signs in through the sign-in screen and waits for the sites list. */
export async function signIn(rig: ConsoleRig, page: Page, who: { email: string; password: string }) {
  await page.goto(rig.url('/sign-in'));
  await page.locator('#field-email').fill(who.email);
  await page.locator('#field-password').fill(who.password);
  await page.locator('button[type=submit]').click();
  await page.waitForFunction(() => document.title.startsWith('Your sites'));
}

/** Waits until the page's text contains `text`. */
export async function waitForText(page: Page, text: string, timeout = 15_000) {
  await page.waitForFunction((t) => document.body.innerText.includes(t), { timeout }, text);
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** axe-core on the page as it is now: no serious or critical violation (and nothing the CSP refused). */
export async function expectAccessible(page: Page) {
  const refused = await page.evaluate(
    () => (window as unknown as { __cspViolations?: string[] }).__cspViolations ?? [],
  );
  expect(refused, `Content-Security-Policy violations on ${page.url()}`).toEqual([]);
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  const bad = violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  expect(bad, `accessibility violations on ${page.url()}`).toEqual([]);
}

/** Keeps a screenshot of a screen (for the note and for people reviewing a change). */
export async function capture(page: Page, name: string) {
  const dir = path.join(RESULTS_DIR, 'screens');
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

/**
 * No sideways scroll of the page. Compared with the root's clientWidth: at phone width Chromium
 * widens the layout viewport (window.innerWidth) to fit what overflows, so that would hide it.
 */
export async function expectNoSidewaysScroll(page: Page) {
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow, `the page scrolls sideways at ${page.url()}`).toBeLessThanOrEqual(0);
}

/**
 * Presses Tab (as a keyboard-only user does) until the focused control's own text starts with
 * `text`; fails after `most` presses. Returns how many presses it took.
 */
export async function tabTo(page: Page, text: string, most = 80): Promise<number> {
  for (let presses = 1; presses <= most; presses++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement;
      return el && el !== document.body ? (el.textContent ?? '').trim() : '';
    });
    if (focused.startsWith(text)) return presses;
  }
  throw new Error(`"${text}" never had the focus after ${most} presses of Tab`);
}
