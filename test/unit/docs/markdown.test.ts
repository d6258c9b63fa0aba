import { describe, expect, it } from 'vitest';
import { anchorsOf, linksOf, slugify } from '../../support/markdown.js';

// GitHub's anchors, as github-slugger computes them (its own test cases where they apply here).
describe('slugify: the anchor GitHub gives a heading', () => {
  it.each([
    ['The two commands', 'the-two-commands'],
    ['The image without Docker (`make image-oci`)', 'the-image-without-docker-make-image-oci'],
    ['Temporary keys and the session that minted them', 'temporary-keys-and-the-session-that-minted-them'],
    ['MCP: tenant data stays fenced', 'mcp-tenant-data-stays-fenced'],
    ['The SQLite engine: guard, caps, encodings', 'the-sqlite-engine-guard-caps-encodings'],
    ['Replication (`make bench-replication`)', 'replication-make-bench-replication'],
    ['CI’s time', 'cis-time'],
    ['snake_case stays', 'snake_case-stays'],
    ['Two  spaces', 'two--spaces'],
    ['Émoji ✨ and accents', 'émoji--and-accents'],
    ['A [link](x.md) and **bold**', 'a-link-and-bold'],
    ['Closing hashes ##', 'closing-hashes'],
    ['HostplaneSqliteShardLost', 'hostplanesqliteshardlost'],
  ])('%s → %s', (heading, slug) => {
    expect(slugify(heading)).toBe(slug);
  });

  it('numbers a repeated heading -1, -2 and ignores headings inside fenced code', () => {
    const page = ['# A', '## Notes', '```sh', '# not a heading', '```', '## Notes', '### Notes'].join('\n');
    expect([...anchorsOf(page)]).toEqual(['a', 'notes', 'notes-1', 'notes-2']);
  });
});

describe('linksOf', () => {
  it('finds inline and reference links with their lines, and none inside code', () => {
    const page = [
      'See [a](docs/a.md#x) and [b](<b c.md>).',
      '`[not](a-link.md)` and ``[nor](this.md)``',
      '```',
      '[inside](fence.md)',
      '```',
      '[ref]: ../ref.md',
      '[t](https://example.com "title")',
    ].join('\n');
    expect(linksOf(page)).toEqual([
      { target: 'docs/a.md#x', line: 1 },
      { target: 'b c.md', line: 1 },
      { target: 'https://example.com', line: 7 },
      { target: '../ref.md', line: 6 },
    ]);
  });
});
