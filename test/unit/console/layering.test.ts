import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

// `npm run layers` (dependency-cruiser with .dependency-cruiser.cjs) holds the console to its
// layers, top to bottom: main.tsx, routes.tsx, screens/, the kit (ui/, session.tsx), router.tsx,
// and links.ts and api.ts at the floor. These tests run the same command, with the project's
// config, over small console trees: the layout as it should be passes, and each arrow that runs
// back up, or closes a circle, fails with the rule that names it.

const ROOT = resolve(import.meta.dirname, '../../..');
const DEPCRUISE = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');

const run = promisify(execFile);
const made: string[] = [];
afterAll(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The console as it should be: each file and what it imports (console/src-relative). */
const LAYOUT: Record<string, string[]> = {
  'main.tsx': ['./routes.js', './router.js', './session.js', './ui/kit.js', './api.js', './links.js'],
  'routes.tsx': ['./screens/sites.js', './screens/site.js', './links.js'],
  'screens/screen.ts': [],
  'screens/sites.tsx': [
    './screen.js',
    './site.js',
    '../ui/kit.js',
    '../session.js',
    '../router.js',
    '../links.js',
  ],
  'screens/site.tsx': ['./screen.js', './site.css', '../api.js', '../links.js'],
  'session.tsx': ['./api.js'],
  'ui/kit.tsx': ['../api.js', '../router.js', './other.js'],
  'ui/other.tsx': [],
  'router.tsx': ['./links.js'],
  'links.ts': [],
  'api.ts': [],
  'screens/site.css': [],
  // Imported by no one here; the last test imports them.
  'helpers.ts': [],
  '../../src/errors/index.ts': [],
};

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** Writes a console tree (LAYOUT plus `extra` imports) and runs the layering check over it. */
async function check(extra: Record<string, string[]> = {}): Promise<Violation[]> {
  const dir = mkdtempSync(join(tmpdir(), 'console-layers-'));
  made.push(dir);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { jsx: 'react-jsx' } }));
  for (const [file, imports] of Object.entries(LAYOUT)) {
    const all = [...imports, ...(extra[file] ?? [])];
    const path = join(dir, 'console/src', file);
    mkdirSync(dirname(path), { recursive: true });
    const text = all.map((from, i) => `import * as m${i} from '${from}';\n`).join('') + 'export {};\n';
    writeFileSync(path, file.endsWith('.css') ? '' : text);
  }
  const args = [DEPCRUISE, 'console/src', '--config', CONFIG, '--output-type', 'json'];
  const out = await run(process.execPath, args, { cwd: dir }).catch(
    (error: { stdout?: string; code?: number }) => {
      // depcruise exits with the number of errors it found; its report is on stdout all the same.
      if (typeof error.stdout !== 'string' || !error.stdout) throw error;
      return { stdout: error.stdout };
    },
  );
  const report = JSON.parse(out.stdout) as { summary: { violations: Violation[] } };
  return report.summary.violations.map(({ rule, from, to }) => ({
    rule: { name: rule.name },
    from: from.replace('console/src/', ''),
    to: to.replace('console/src/', ''),
  }));
}

const arrows = (violations: Violation[]) => violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);

describe('the console’s layers', () => {
  it('pass the console laid out as it should be', async () => {
    expect(arrows(await check())).toEqual([]);
  });

  it('fail a screen that imports the route table, a circle and an arrow back up at once', async () => {
    const found = arrows(await check({ 'screens/site.tsx': ['../routes.js'] }));
    expect(found).toContain('console-screens-import-nothing-above: screens/site.tsx → routes.tsx');
    expect(found.some((arrow) => arrow.startsWith('no-circular:'))).toBe(true);
  });

  it('fail each arrow that runs back up, one rule a floor', async () => {
    const found = arrows(
      await check({
        'routes.tsx': ['./main.js'],
        'ui/other.tsx': ['../screens/screen.js'],
        'session.tsx': ['./screens/screen.js'],
        'router.tsx': ['./ui/other.js'],
        'links.ts': ['./api.js'],
        'api.ts': ['./router.js'],
      }),
    );
    expect(found).toEqual(
      expect.arrayContaining([
        'console-routes-import-nothing-above: routes.tsx → main.tsx',
        'console-kit-imports-nothing-above: ui/other.tsx → screens/screen.ts',
        'console-kit-imports-nothing-above: session.tsx → screens/screen.ts',
        'console-router-imports-nothing-above: router.tsx → ui/other.tsx',
        'console-floor-imports-no-console-module: links.ts → api.ts',
        'console-floor-imports-no-console-module: api.ts → router.tsx',
      ]),
    );
  });

  it('fail a circle among the screens themselves', async () => {
    const found = arrows(await check({ 'screens/screen.ts': ['./site.js'] }));
    expect(found.filter((arrow) => arrow.startsWith('no-circular:'))).not.toEqual([]);
  });

  it('fail a console module that no layer names, and the console and the service importing each other', async () => {
    const found = arrows(
      await check({ 'screens/site.tsx': ['../helpers.js'], 'api.ts': ['../../src/errors/index.js'] }),
    );
    expect(found).toEqual(
      expect.arrayContaining([
        'console-files-have-a-layer: screens/site.tsx → helpers.ts',
        'console-and-service-are-apart: api.ts → src/errors/index.ts',
      ]),
    );
  });
});
