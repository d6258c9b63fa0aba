// Time to first render of the console, against PocketBase's dashboard (its login screen), in
// Debian's headless Chromium on loopback. A run is a fresh browser context (no cache, no cookies:
// what a first visit costs) or the same context again (cached assets, a return visit). Measured
// from navigation start: first contentful paint, and the moment the screen's form is usable (the
// email input exists). Also the console's bundle size (dist/console/build.json).
//
//   npx tsx bench/console/first-render.ts [--runs 15]
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import puppeteer, { type Browser, type BrowserContext } from 'puppeteer-core';
import { chromiumPath } from '../../test/support/chromium.js';
import { captureOutput, freePort, terminate, waitUntilReady } from '../../test/support/procs.js';
import { startServer } from '../support/server.js';

const exec = promisify(execFile);
const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 15);
const repo = path.resolve(import.meta.dirname, '../..');

interface Sample {
  fcp: number;
  usable: number;
}

async function measure(context: BrowserContext, url: string, ready: string): Promise<Sample> {
  const page = await context.newPage();
  try {
    await page.goto(url, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(ready);
    return await page.evaluate(() => {
      const fcp = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN;
      return { fcp, usable: performance.now() };
    });
  } finally {
    await page.close();
  }
}

async function series(browser: Browser, url: string, ready: string) {
  const cold: Sample[] = [];
  const warm: Sample[] = [];
  await measure(await browser.createBrowserContext(), url, ready); // the server's first answer, not counted
  for (let i = 0; i < runs; i++) {
    const context = await browser.createBrowserContext();
    cold.push(await measure(context, url, ready));
    warm.push(await measure(context, url, ready));
    await context.close();
  }
  return { cold, warm };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

async function startPocketbase() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pocketbase-bench-console-'));
  const port = await freePort();
  const dirs = [
    `--dir=${path.join(dir, 'pb_data')}`,
    `--migrationsDir=${path.join(dir, 'pb_migrations')}`,
    `--hooksDir=${path.join(dir, 'pb_hooks')}`,
    `--publicDir=${path.join(dir, 'pb_public')}`,
    '--automigrate=false',
  ];
  const bin = path.join(repo, '.cache/tools/pocketbase');
  await exec('bash', [path.join(repo, 'test/tools/pocketbase/build.sh')], { maxBuffer: 1 << 24 });
  await exec(bin, ['superuser', 'upsert', 'bench@example.com', 'bench-password-1234', ...dirs]);
  const child = spawn(bin, ['serve', '--http', `127.0.0.1:${port}`, ...dirs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const health = `http://127.0.0.1:${port}/api/health`;
  await waitUntilReady('pocketbase', child, captureOutput(child), async () => (await fetch(health)).ok);
  return {
    url: `http://127.0.0.1:${port}/_/`,
    stop: async () => {
      await terminate(child, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const hostplane = await startServer({
  bin: 'dist/src/cli/main.js',
  name: 'console',
  localhostUrls: true,
  output: 'ignore',
});
const pocketbase = await startPocketbase();
const browser = await puppeteer.launch({
  executablePath: chromiumPath(),
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const ours = await series(browser, `http://localhost:${hostplane.port}/console/sign-in`, '#field-email');
  const theirs = await series(
    browser,
    pocketbase.url,
    'input[type=email], input[name=identity], input#identity',
  );
  const size = JSON.parse(readFileSync('dist/console/build.json', 'utf8')) as Record<
    string,
    { bytes: number; gzip: number }
  >;
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  console.log(
    `console bundle: JS ${kb(size.js!.bytes)} (${kb(size.js!.gzip)} gzip), CSS ${kb(size.css!.bytes)} (${kb(size.css!.gzip)} gzip)`,
  );
  console.log(`median of ${runs} runs, ms from navigation start   Hostplane   PocketBase   ratio`);
  for (const visit of ['cold', 'warm'] as const)
    for (const metric of ['fcp', 'usable'] as const) {
      const a = median(ours[visit].map((s) => s[metric]));
      const b = median(theirs[visit].map((s) => s[metric]));
      const label = `${visit} ${metric === 'fcp' ? 'first contentful paint' : 'sign-in form usable'}`;
      console.log(
        `${label.padEnd(46)} ${a.toFixed(0).padStart(9)} ${b.toFixed(0).padStart(12)} ${(a / b).toFixed(2).padStart(7)}`,
      );
    }
} finally {
  await browser.close();
  await pocketbase.stop();
  await hostplane.stop();
}
