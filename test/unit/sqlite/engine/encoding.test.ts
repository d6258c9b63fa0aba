import { describe, expect, it } from 'vitest';
import {
  decodeParam,
  decodeParams,
  encodeCell,
  SqliteEngineError,
} from '../../../../src/sqlite/engine/index.js';
import { freesSpace } from '../../../../src/sqlite/engine/statement-kind.js';
import { cellBytes } from '../../../../src/sqlite/engine/encoding.js';

describe('SQLite value encoding', () => {
  it('binds whole numbers as integers, others as reals, booleans as 1/0', () => {
    expect(decodeParam(5, 0)).toBe(5n);
    expect(decodeParam(-0.5, 0)).toBe(-0.5);
    expect(decodeParam(2 ** 60, 0)).toBe(2 ** 60); // not a safe integer: a REAL, as JSON gave it
    expect(decodeParam(true, 0)).toBe(1n);
    expect(decodeParam(false, 0)).toBe(0n);
    expect(decodeParam(null, 0)).toBeNull();
    expect(decodeParam('x', 0)).toBe('x');
  });

  it('decodes the tagged forms', () => {
    expect(decodeParam({ $bigint: '-9223372036854775808' }, 0)).toBe(-(2n ** 63n));
    expect(decodeParam({ $base64: 'AAH/' }, 0)).toEqual(Buffer.from([0, 1, 255]));
    expect(decodeParam({ $real: '-Infinity' }, 0)).toBe(-Infinity);
  });

  it.each([
    [{ $bigint: '9223372036854775808' }, /64-bit range/],
    [{ $bigint: '1e5' }, /decimal integer/],
    [{ $base64: 'AAH' }, /base64/],
    [{ $base64: 'AA==', extra: 1 }, /objects other than/],
    [[1], /objects other than/],
    [{}, /objects other than/],
    [Infinity, /finite/],
    [NaN, /finite/],
    [undefined, /undefined/],
  ])('refuses %j', (value, message) => {
    expect(() => decodeParam(value, 2)).toThrow(SqliteEngineError);
    expect(() => decodeParam(value, 2)).toThrow(message);
    expect(() => decodeParam(value, 2)).toThrow(/^Parameter 3/);
  });

  it('params must be an array when given', () => {
    expect(decodeParams(undefined)).toEqual([]);
    expect(() => decodeParams({ 0: 1 })).toThrow(/must be an array/);
  });

  it('encodes cells losslessly', () => {
    expect(encodeCell(2n ** 53n - 1n)).toBe(2 ** 53 - 1);
    expect(encodeCell(2n ** 53n)).toEqual({ $bigint: '9007199254740992' });
    expect(encodeCell(-(2n ** 63n))).toEqual({ $bigint: '-9223372036854775808' });
    expect(encodeCell(Buffer.from('hi'))).toEqual({ $base64: 'aGk=' });
    expect(encodeCell(Infinity)).toEqual({ $real: 'Infinity' });
    expect(encodeCell(1.25)).toBe(1.25);
    expect(encodeCell(null)).toBeNull();
  });

  it('every encoded value decodes back to what SQLite gave', () => {
    for (const v of [0n, 2n ** 62n, -(2n ** 63n), Buffer.from([1, 2, 3]), 'text', 0.1, -Infinity]) {
      const back = decodeParam(JSON.parse(JSON.stringify(encodeCell(v))), 0);
      expect(back).toEqual(v);
    }
  });
});

describe('statements a database over its cap still runs', () => {
  it.each([
    ['DELETE FROM t', true],
    ['  delete from t', true],
    ['-- free space\nDROP TABLE t', true],
    ['/* a */ /* b */ DROP INDEX i', true],
    ['INSERT INTO t VALUES (1)', false],
    ['UPDATE t SET a = NULL', false],
    ['WITH x AS (SELECT 1) DELETE FROM t', false],
    ['DELETED', false],
    ['-- DELETE\nINSERT INTO t VALUES (1)', false],
  ])('%j → %s', (sql, expected) => {
    expect(freesSpace(sql)).toBe(expected);
  });
});

describe('cellBytes counts the JSON the answer writes', () => {
  it('counts escapes: six bytes a control character, two a quote, backslash or newline', () => {
    for (const value of [
      'plain',
      'a "quoted" \\ path',
      'tab\tnew\nline',
      '\u0001\u0002\u001f',
      'é ✓ 😀',
      '',
    ]) {
      expect(cellBytes(value), JSON.stringify(value)).toBe(Buffer.byteLength(JSON.stringify(value)));
    }
  });
});
