import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/index.js';
import { bytesOf } from '../../../src/mcp/tool.js';

describe('bytesOf (the content + encoding of the deploy tools)', () => {
  it('decodes base64, with or without line breaks and padding', () => {
    expect(bytesOf('aGVsbG8=', 'base64').toString()).toBe('hello');
    expect(bytesOf('aGVs\r\nbG8', 'base64').toString()).toBe('hello');
    expect(bytesOf('  aGVsbG8h \n', 'base64').toString()).toBe('hello!');
    expect(bytesOf('', 'base64').length).toBe(0);
    expect(bytesOf('héllo', 'utf8').toString()).toBe('héllo');
  });

  it('refuses what is not base64 as a 400', () => {
    for (const bad of ['aGVsbG8=!', 'a=b', 'aGVsbG8===', '-_-_', 'aGVs bG8=x'])
      expect(() => bytesOf(bad, 'base64'), bad).toThrow(AppError);
  });

  it('refuses a large non-base64 content in linear time (no backtracking regex)', () => {
    // 2 MB of whitespace then one bad character: a backtracking check takes hours on this.
    const started = performance.now();
    expect(() => bytesOf(`${' '.repeat(2 * 1024 * 1024)}!`, 'base64')).toThrow(AppError);
    expect(() => bytesOf(`${'A\n'.repeat(1024 * 1024)}=!`, 'base64')).toThrow(AppError);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
