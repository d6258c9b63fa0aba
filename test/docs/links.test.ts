import { existsSync, statSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, isExternal, linksOf } from '../support/markdown.js';

// The documentation's links hold: every relative link and #anchor in the README, docs/ and the
// chart README names a file that exists and a heading it has (GitHub's anchors); every alert of
// the chart's PrometheusRule links a runbook page that exists.

const ROOT = path.resolve(import.meta.dirname, '../..');

async function pages(): Promise<string[]> {
  const docs = (await readdir(path.join(ROOT, 'docs'), { recursive: true }))
    .filter((file) => file.endsWith('.md'))
    .map((file) => path.join('docs', file));
  return ['README.md', 'charts/hostplane/README.md', ...docs.sort()];
}

const anchorCache = new Map<string, Set<string>>();
async function anchorsOfFile(file: string): Promise<Set<string>> {
  let anchors = anchorCache.get(file);
  if (!anchors) {
    anchors = anchorsOf(await readFile(file, 'utf8'));
    anchorCache.set(file, anchors);
  }
  return anchors;
}

/** What is wrong with one link of `page`, or undefined when it resolves. */
async function problemOf(page: string, target: string): Promise<string | undefined> {
  const hash = target.indexOf('#');
  const filePart = decodeURI(hash === -1 ? target : target.slice(0, hash));
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file =
    filePart === '' ? path.join(ROOT, page) : path.resolve(path.dirname(path.join(ROOT, page)), filePart);
  if (!file.startsWith(ROOT + path.sep)) return 'leaves the repository';
  if (!existsSync(file)) return 'no such file';
  if (anchor === undefined) return undefined;
  if (!file.endsWith('.md') || statSync(file).isDirectory()) return undefined; // #L10 of a source file: GitHub's
  return (await anchorsOfFile(file)).has(anchor) ? undefined : `no heading with the anchor #${anchor}`;
}

describe('documentation links', () => {
  it('every relative link and anchor in README.md, docs/ and the chart README resolves', async () => {
    const broken: string[] = [];
    const files = await pages();
    expect(files.length).toBeGreaterThan(20);
    for (const page of files) {
      for (const { target, line } of linksOf(await readFile(path.join(ROOT, page), 'utf8'))) {
        if (isExternal(target)) continue;
        const problem = await problemOf(page, target);
        if (problem) broken.push(`${page}:${line}: ${target} (${problem})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('every page of docs/ is reachable from README.md', async () => {
    const reached = new Set<string>();
    const queue = ['README.md'];
    while (queue.length > 0) {
      const page = queue.pop() ?? '';
      if (reached.has(page)) continue;
      reached.add(page);
      for (const { target } of linksOf(await readFile(path.join(ROOT, page), 'utf8'))) {
        if (isExternal(target)) continue;
        const file = target.split('#')[0] ?? '';
        if (!file.endsWith('.md')) continue;
        const next = path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, page)), decodeURI(file)));
        if (next.startsWith('docs' + path.sep) && existsSync(path.join(ROOT, next))) queue.push(next);
      }
    }
    const docs = (await pages()).filter((page) => page.startsWith('docs' + path.sep));
    expect(docs.filter((page) => !reached.has(page))).toEqual([]);
  });

  it("every alert's runbook_url names the runbook page of that alert, which exists", async () => {
    const template = await readFile(
      path.join(ROOT, 'charts/hostplane/templates/prometheusrule.yaml'),
      'utf8',
    );
    const values = await readFile(path.join(ROOT, 'charts/hostplane/values.yaml'), 'utf8');
    const base = /^ {4}docsBaseUrl: (\S+)$/m.exec(values)?.[1];
    expect(base).toBe('https://github.com/hostplane/hostplane/blob/main/docs');
    const rules = template.split(/^\s+- alert: /m).slice(1);
    expect(rules.length).toBeGreaterThan(0);
    const missing: string[] = [];
    for (const rule of rules) {
      const alert = rule.split('\n')[0]?.trim() ?? '';
      const url =
        /runbook_url: \{\{ printf "%s\/sre\/runbooks\/%s\.md" \$rules\.docsBaseUrl "(\w+)" \| quote \}\}/.exec(
          rule,
        );
      if (url?.[1] !== alert)
        missing.push(`${alert}: runbook_url does not name docs/sre/runbooks/${alert}.md`);
      else if (!existsSync(path.join(ROOT, 'docs/sre/runbooks', `${alert}.md`)))
        missing.push(`${alert}: docs/sre/runbooks/${alert}.md does not exist`);
    }
    expect(missing).toEqual([]);
  });
});
