import { describe, expect, it } from 'vitest';
import { formatBytes, percentage } from '../../../src/platform/format.js';

const KB = 1024;
const MB = 1024 ** 2;
const GB = 1024 ** 3;

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [1, '1 B'],
    [512, '512 B'],
    [1023, '1023 B'],
    [KB, '1 KB'],
    [1536, '1.5 KB'],
    [1234, '1.21 KB'],
    [10 * MB, '10 MB'],
    [500 * MB, '500 MB'],
    [15 * GB, '15 GB'],
    [200 * GB, '200 GB'],
    [1024 * GB, '1 TB'],
    [5 * 1024 ** 5, '5120 TB'],
  ])('%d bytes → %j', (bytes, expected) => {
    expect(formatBytes(bytes)).toBe(expected);
  });

  it('uses binary units: the spec limits 10485760 and 524288000 read as 10 MB and 500 MB', () => {
    expect(formatBytes(10485760)).toBe('10 MB');
    expect(formatBytes(524288000)).toBe('500 MB');
  });

  it('rounds to at most two decimals', () => {
    expect(formatBytes(KB + 1)).toBe('1 KB');
    expect(formatBytes(Math.round(1.005 * MB))).toMatch(/^1(\.\d{1,2})? MB$/);
    expect(formatBytes(Math.round(2.3456 * GB))).toBe('2.35 GB');
  });

  it.each([
    [MB - 1, '1 MB'],
    [GB - 1, '1 GB'],
    [KB * KB - 5, '1 MB'],
  ])('carries into the next unit when rounding reaches 1024: %d → %j', (bytes, expected) => {
    expect(formatBytes(bytes)).toBe(expected);
  });
});

describe('percentage', () => {
  it('is 0 for an unlimited (null) limit', () => {
    expect(percentage(12345, null)).toBe(0);
  });

  it('is 0 for a zero limit rather than dividing by zero', () => {
    expect(percentage(5, 0)).toBe(0);
  });

  it.each([
    [0, 200, 0],
    [1, 200, 0.5],
    [100, 200, 50],
    [160, 200, 80],
    [200, 200, 100],
    [1, 3, 33.33],
    [2, 3, 66.66],
  ])('%d of %d → %d', (current, limit, expected) => {
    expect(percentage(current, limit)).toBe(expected);
  });

  it('never reports more than 100, even over the limit', () => {
    expect(percentage(250, 200)).toBe(100);
  });

  it('never rounds up to a threshold that has not been reached', () => {
    // 79999 of 100000 is 79.999 %: reporting 80 would trip the "80 % or more" warning early.
    expect(percentage(79_999, 100_000)).toBeLessThan(80);
    expect(percentage(99_999, 100_000)).toBeLessThan(100);
    expect(percentage(80_000, 100_000)).toBe(80);
  });

  it('is exact at 80 % of the free plan storage (419430400 of 524288000)', () => {
    expect(percentage(419430400, 524288000)).toBe(80);
    expect(percentage(419430399, 524288000)).toBeLessThan(80);
  });

  it('has at most two decimals', () => {
    const value = percentage(12_345, 524_288_000);
    expect(Math.round(value * 100) / 100).toBe(value);
  });
});
