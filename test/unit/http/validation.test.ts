import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isAppError } from '../../../src/errors/index.js';
import { parseOrThrow } from '../../../src/http/route.js';

/** The message parseOrThrow gives for `value`, or fails the test when the value is accepted. */
function messageFor(schema: z.ZodType, value: unknown): string {
  try {
    parseOrThrow(schema, value, 'body');
  } catch (err) {
    if (isAppError(err, 'INVALID_REQUEST')) return err.message;
    throw err;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
}

describe('validation messages say what is wrong, in words', () => {
  const body = z.object({
    path: z.string().min(1),
    expires_in: z.int().min(60).max(86_400).optional(),
    encoding: z.enum(['base64', 'utf8']).optional(),
  });

  it.each([
    [{}, 'path is required'],
    [{ path: 123 }, 'path must be a string, not number'],
    [{ path: '' }, 'path must not be empty'],
    [{ path: 'a', expires_in: 1.5 }, `expires_in must be a whole number within ±${Number.MAX_SAFE_INTEGER}`],
    [{ path: 'a', expires_in: '3600' }, 'expires_in must be a number, not string'],
    [{ path: 'a', expires_in: 30 }, 'expires_in must be at least 60'],
    [{ path: 'a', expires_in: 90_000 }, 'expires_in must be at most 86400'],
    [{ path: 'a', encoding: 'hex' }, 'encoding must be one of "base64", "utf8"'],
    [[], 'body must be a JSON object, not a list'],
  ])('%j → %s', (value, message) => {
    expect(messageFor(body, value)).toBe(message);
  });

  it('keeps a message the schema wrote itself', () => {
    expect(messageFor(z.object({ n: z.string().regex(/^\d+$/, 'must be digits') }), { n: 'x' })).toBe(
      'n must be digits',
    );
  });
});
