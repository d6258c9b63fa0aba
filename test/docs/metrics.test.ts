import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// docs/sre/metrics.md lists every metric the code registers, and no metric the code does not.

const ROOT = path.resolve(import.meta.dirname, '../..');

async function registeredMetrics(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const dir of ['src', 'controllers']) {
    for (const file of await readdir(path.join(ROOT, dir), { recursive: true })) {
      if (!file.endsWith('.ts')) continue;
      const text = await readFile(path.join(ROOT, dir, file), 'utf8');
      for (const [, name] of text.matchAll(/\bname: '(hostplane_[a-z0-9_]+)'/g)) names.add(name ?? '');
    }
  }
  return names;
}

describe('docs/sre/metrics.md', () => {
  it('has a row for every metric the code registers, and for no other', async () => {
    const page = await readFile(path.join(ROOT, 'docs/sre/metrics.md'), 'utf8');
    const rows = new Set([...page.matchAll(/^\| `(hostplane_[a-z0-9_]+)`/gm)].map(([, name]) => name ?? ''));
    const code = await registeredMetrics();
    expect(code.size).toBeGreaterThan(50);
    expect([...code].filter((name) => !rows.has(name)).sort()).toEqual([]);
    expect([...rows].filter((name) => !code.has(name)).sort()).toEqual([]);
  });
});
