import { describe, expect, it } from 'vitest';
import { quickStatementBody, statementBody } from '../../../src/sqlite/schemas.js';

// The fast path checks a query's or exec's usual body by hand (quickStatementBody) and lets the
// schema decide anything else: whatever the quick check takes, the schema takes, with the same data.

const bodies: unknown[] = [
  { sql: 'SELECT 1' },
  { sql: 'SELECT ?', params: ['r00000000000001'] },
  { sql: 'SELECT ?, ?, ?, ?', params: [1, 2.5, true, null] },
  { sql: 'SELECT ?', params: [{ $bigint: '9223372036854775807' }] },
  { sql: 'SELECT ?', params: [{ $base64: 'AA==' }] },
  { sql: 'SELECT ?', params: [{ $real: 'Infinity' }] },
  { sql: 'SELECT 1', params: [] },
  { sql: 'SELECT 1', extra: 'dropped' },
  { sql: 'x'.repeat(100_000) },
  { sql: '😀'.repeat(50_001) }, // 100,002 UTF-16 units, 50,001 characters: the schema's call
  { sql: 'x'.repeat(100_001) },
  { sql: '' },
  { sql: 1 },
  {},
  { params: [] },
  { sql: 'SELECT 1', params: null },
  { sql: 'SELECT 1', params: 'a' },
  { sql: 'SELECT 1', params: { 0: 'a' } },
  { sql: 'SELECT ?', params: [[1]] },
  { sql: 'SELECT ?', params: [{ $bigint: 1 }] },
  { sql: 'SELECT ?', params: [{ $bigint: '1', $base64: 'AA==' }] },
  { sql: 'SELECT ?', params: [{}] },
  { sql: 'SELECT 1', params: Array(999).fill(1) },
  { sql: 'SELECT 1', params: Array(1000).fill(1) },
  [],
  ['SELECT 1'],
  null,
  'SELECT 1',
  JSON.parse('{"sql":"SELECT 1","__proto__":{"params":[1]}}'),
];

describe('quickStatementBody', () => {
  it('takes only what statementBody takes, with the same data; the rest is left to the schema', () => {
    let taken = 0;
    for (const body of bodies) {
      const quick = quickStatementBody(body);
      const parsed = statementBody.safeParse(body);
      if (quick === undefined) continue;
      taken++;
      expect(parsed.success, JSON.stringify(body).slice(0, 80)).toBe(true);
      expect(quick).toEqual(parsed.data);
    }
    // The usual shapes are taken (the point of it): the first eight, the two at the bounds (100,000
    // units of SQL, 999 values) and the own "__proto__" key JSON.parse makes (dropped, as by the schema).
    expect(taken).toBe(11);
  });
});
