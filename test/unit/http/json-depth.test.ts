import { describe, expect, it } from 'vitest';
import { jsonNestsDeeper, MAX_JSON_DEPTH } from '../../../src/http/index.js';

const nested = (depth: number, open = '[', close = ']') => `${open.repeat(depth)}${close.repeat(depth)}`;
const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('jsonNestsDeeper', () => {
  it('counts objects and arrays inside each other, up to the bound', () => {
    expect(jsonNestsDeeper(bytes(nested(MAX_JSON_DEPTH)))).toBe(false);
    expect(jsonNestsDeeper(bytes(nested(MAX_JSON_DEPTH + 1)))).toBe(true);
    expect(
      jsonNestsDeeper(bytes(`${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}`)),
    ).toBe(true);
    // Wide is not deep: siblings close before the next opens.
    expect(jsonNestsDeeper(bytes(`[${Array.from({ length: 10_000 }, () => '[[1]]').join(',')}]`))).toBe(
      false,
    );
  });

  it('skips brackets inside strings, escaped quotes and backslashes included', () => {
    const inString = JSON.stringify({ s: nested(1_000), t: '\\"[[[[', u: 'é["' + nested(500) });
    expect(jsonNestsDeeper(bytes(inString))).toBe(false);
    expect(jsonNestsDeeper(bytes(`["\\\\", ${nested(MAX_JSON_DEPTH)}]`))).toBe(true);
    expect(jsonNestsDeeper(bytes(`["\\\\"]`), 1)).toBe(false);
  });
});
