import { describe, expect, it } from 'vitest';
import { preferredEncoding } from '../../../src/edge/compression.js';
import { isFingerprinted, namesDatabaseFile } from '../../../src/edge/paths.js';
import { accessLogDecider, startSampledServerSpan } from '../../../src/http/lifecycle.js';

const traceparent = (flags: string) => `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-${flags}`;
const attributes = () => ({});

describe('edge span sampling', () => {
  it('traces a request without traceparent with the configured probability (0 never, 1 always)', () => {
    expect(startSampledServerSpan('GET edge', {}, 0, attributes)).toBeUndefined();
    expect(startSampledServerSpan('GET edge', {}, 1, attributes)).toBeDefined();
  });

  it('follows the parent: traced when its sampled flag is set, whatever the ratio', () => {
    for (const flags of ['01', '03']) {
      expect(
        startSampledServerSpan('GET edge', { traceparent: traceparent(flags) }, 0, attributes),
      ).toBeDefined();
    }
    for (const flags of ['00', '02']) {
      expect(
        startSampledServerSpan('GET edge', { traceparent: traceparent(flags) }, 1, attributes),
      ).toBeUndefined();
    }
  });

  it('builds the attributes only for a traced request', () => {
    let built = 0;
    const count = () => ((built += 1), {});
    startSampledServerSpan('GET edge', {}, 0, count);
    expect(built).toBe(0);
    startSampledServerSpan('GET edge', {}, 1, count);
    expect(built).toBe(1);
  });
});

describe('edge access log modes', () => {
  it('logs none when off, all when all, about the ratio when sampled', () => {
    const share = (decide: () => boolean) => Array.from({ length: 10_000 }, decide).filter(Boolean).length;
    expect(share(accessLogDecider('off', 1))).toBe(0);
    expect(share(accessLogDecider('all', 0))).toBe(10_000);
    const sampled = share(accessLogDecider('sampled', 0.1));
    expect(sampled).toBeGreaterThan(700);
    expect(sampled).toBeLessThan(1300);
  });
});

describe('edge path rules', () => {
  it.each([
    ['app.3f2a9c1b.js', true],
    ['assets/index-BdOrXo1B.js', true],
    ['chunk.0a1b2c3d4e5f.css', true],
    ['jquery-minified.js', false],
    ['report-20240101.pdf', false],
    ['deadbeef.js', false],
    ['style.css', false],
  ])('isFingerprinted(%s) = %s', (path, expected) => expect(isFingerprinted(path)).toBe(expected));

  it.each([
    ['data.db', true],
    ['a/B.SQLite3', true],
    ['x.db-wal', true],
    ['x.sqlite-journal', true],
    ['store.db/index.html', true],
    ['data.db. ', true],
    ['data.dbx', false],
    ['notes.txt', false],
    ['db/index.html', false],
  ])('namesDatabaseFile(%s) = %s', (path, expected) => expect(namesDatabaseFile(path)).toBe(expected));

  it.each([
    [undefined, undefined],
    ['gzip, deflate, br', 'br'],
    ['gzip', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['*', 'br'],
    ['*;q=0', undefined],
    ['identity', undefined],
    ['GZIP;q=0.5', 'gzip'],
  ])('preferredEncoding(%s) = %s', (header, expected) => expect(preferredEncoding(header)).toBe(expected));
});
