import { SqliteEngineError } from './errors.js';

/**
 * How SQLite values travel as JSON, both ways (parameters in, cells out), losslessly:
 *
 *   NULL                          null
 *   INTEGER within ±(2^53 − 1)    a JSON number
 *   INTEGER beyond that           {"$bigint": "9007199254740993"}   (decimal string)
 *   REAL                          a JSON number; ±Infinity as {"$real": "Infinity" | "-Infinity"}
 *   TEXT                          a JSON string
 *   BLOB                          {"$base64": "AAEC…"}              (standard base64, padded)
 *
 * Parameters also accept booleans (bound as 1 and 0). A whole number is bound as an INTEGER, any
 * other number as a REAL. Anything else (arrays, other objects) is refused.
 */
export type SqlValue =
  null | number | string | { $bigint: string } | { $base64: string } | { $real: 'Infinity' | '-Infinity' };

export type SqlParam = SqlValue | boolean;

/** What better-sqlite3 binds. */
export type BindValue = null | number | bigint | string | Buffer;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function badParam(index: number, why: string): SqliteEngineError {
  return new SqliteEngineError({ kind: 'statement', message: `Parameter ${index + 1}: ${why}` });
}

/** One JSON parameter → the value bound to `?` number `index + 1`. */
export function decodeParam(value: unknown, index: number): BindValue {
  if (value === null) return null;
  switch (typeof value) {
    case 'string':
      return value;
    case 'boolean':
      return value ? 1n : 0n;
    case 'number':
      if (!Number.isFinite(value)) throw badParam(index, 'not a finite number');
      // Integers bind as INTEGER (better-sqlite3 binds a JS number as REAL).
      return Number.isSafeInteger(value) ? BigInt(value) : value;
    case 'object': {
      const keys = Object.keys(value);
      const tagged = value as Record<string, unknown>;
      if (keys.length === 1 && typeof tagged.$bigint === 'string') {
        if (!/^-?\d{1,19}$/.test(tagged.$bigint)) throw badParam(index, '$bigint must be a decimal integer');
        const n = BigInt(tagged.$bigint);
        if (n > INT64_MAX || n < INT64_MIN) throw badParam(index, '$bigint is outside the 64-bit range');
        return n;
      }
      if (keys.length === 1 && typeof tagged.$base64 === 'string') {
        if (tagged.$base64.length % 4 !== 0 || !BASE64.test(tagged.$base64)) {
          throw badParam(index, '$base64 is not standard padded base64');
        }
        return Buffer.from(tagged.$base64, 'base64');
      }
      if (keys.length === 1 && (tagged.$real === 'Infinity' || tagged.$real === '-Infinity')) {
        return tagged.$real === 'Infinity' ? Infinity : -Infinity;
      }
      throw badParam(index, 'objects other than {"$bigint"}, {"$base64"} and {"$real"} are not values');
    }
    default:
      throw badParam(index, `a ${typeof value} is not a value`);
  }
}

/**
 * Whether `value` has the shape of one parameter (a scalar, or an object of one tagged key with a
 * string): a cheap check the HTTP layer runs before anything goes to a worker, so that no nested
 * structure is ever cloned there. decodeParam checks the rest (the tag's name and text).
 */
export function isParamShape(value: unknown): boolean {
  if (value === null) return true;
  const type = typeof value;
  if (type === 'string' || type === 'number' || type === 'boolean') return true;
  if (type !== 'object' || Array.isArray(value)) return false;
  let keys = 0;
  for (const key in value as object) {
    if (++keys > 1 || typeof (value as Record<string, unknown>)[key] !== 'string') return false;
  }
  return keys === 1;
}

export function decodeParams(params: unknown): BindValue[] {
  if (params === undefined || params === null) return [];
  if (!Array.isArray(params)) {
    throw new SqliteEngineError({
      kind: 'statement',
      message: 'params must be an array (positional ? placeholders)',
    });
  }
  return params.map(decodeParam);
}

/** One cell read with safeIntegers on (integers arrive as bigint) → its JSON value. */
export function encodeCell(value: unknown): SqlValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') {
    return value <= MAX_SAFE && value >= MIN_SAFE ? Number(value) : { $bigint: value.toString() };
  }
  if (typeof value === 'number') {
    return Number.isFinite(value) ? value : { $real: value > 0 ? 'Infinity' : '-Infinity' };
  }
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return { $base64: value.toString('base64') };
  return String(value);
}

/** Characters JSON writes escaped: `"`, `\\` and the control characters. */
// eslint-disable-next-line no-control-regex -- the control characters are what JSON escapes
const ESCAPED = /["\\\u0000-\u001f]/g;

/**
 * The bytes a cell takes in the JSON response (for the per-response byte cap), escapes included:
 * a control character is written as six (`\u0001`), so a string of them is six times its length.
 */
export function cellBytes(value: SqlValue): number {
  if (value === null) return 4;
  if (typeof value === 'number') return 24;
  if (typeof value === 'string') {
    let bytes = Buffer.byteLength(value) + 2;
    ESCAPED.lastIndex = 0;
    if (!ESCAPED.test(value)) return bytes;
    ESCAPED.lastIndex = 0;
    for (let m = ESCAPED.exec(value); m; m = ESCAPED.exec(value)) {
      const c = m[0].charCodeAt(0);
      bytes +=
        c === 0x22 || c === 0x5c || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x08 || c === 0x0c
          ? 1
          : 5;
    }
    return bytes;
  }
  if ('$base64' in value) return value.$base64.length + 14;
  return 40;
}
