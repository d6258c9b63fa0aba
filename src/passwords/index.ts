import argon2 from 'argon2';
import { dictionary } from '@zxcvbn-ts/language-common';
import client from 'prom-client';
import { AppError } from '../errors/index.js';
import { registry } from '../observability/index.js';
import { passwordWeakness } from './policy.js';

export { contextWords, passwordWeakness, SERVICE_WORDS, type Weakness, type WeakRule } from './policy.js';

// Password policy shared by every kind of account (the platform's owners, the SQLite end-user
// pools): argon2id with OWASP's parameters, a maintained common-password list, and NIST SP
// 800-63B's repetitive, sequential and context-specific passwords refused (policy.ts).

/** OWASP's minimum for argon2id: 19 MiB, 2 iterations, 1 lane. */
export const ARGON2_OPTIONS = {
  type: argon2.argon2id,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;
export const MIN_PASSWORD_CHARS = 8;
/** Hashing work is bounded: a megabyte "password" would be hashed all the same. */
export const MAX_PASSWORD_CHARS = 256;

/** Passwords refused when set, by the rule they broke (a guess at how people try, never who). */
export const passwordsRefusedTotal = new client.Counter({
  name: 'hostplane_passwords_refused_total',
  help: 'New passwords refused by the password policy, by rule',
  labelNames: ['rule'] as const,
  registers: [registry],
});

// zxcvbn-ts's list of ~49,000 common passwords (the maintained successor of Dropbox's zxcvbn).
const common = new Set((dictionary['passwords-common'] as string[]).map((p) => p.toLowerCase()));

/**
 * Refuses a password that is too short, too long, on the common-password list, repetitive,
 * sequential, or built on its context: the email, the site's slug or host names (any strings
 * that name the account or site; the service's name is always part of it).
 */
export function checkPassword(password: string, context: readonly string[] = []): void {
  // Characters as the document counts them (code points): an emoji is one, not two.
  const length = [...password].length;
  if (length < MIN_PASSWORD_CHARS) {
    passwordsRefusedTotal.inc({ rule: 'short' });
    throw new AppError('PASSWORD_TOO_SHORT');
  }
  if (length > MAX_PASSWORD_CHARS) {
    passwordsRefusedTotal.inc({ rule: 'long' });
    throw new AppError('INVALID_REQUEST', {
      message: `password must be at most ${MAX_PASSWORD_CHARS} characters`,
    });
  }
  if (common.has(password.toLowerCase())) {
    passwordsRefusedTotal.inc({ rule: 'common' });
    throw new AppError('PASSWORD_TOO_COMMON');
  }
  const weak = passwordWeakness(password, context);
  if (weak) {
    passwordsRefusedTotal.inc({ rule: weak.rule });
    throw new AppError('PASSWORD_TOO_COMMON', { message: weak.message });
  }
}

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, ARGON2_OPTIONS);
}

// Verified against when the email is unknown, so that answer takes as long as a wrong password.
let dummyHash: Promise<string> | undefined;

/** Checks `password` against `hash`, or burns the same time when there is no hash. */
export async function verifyPassword(hash: string | undefined, password: string): Promise<boolean> {
  const target = hash ?? (await (dummyHash ??= argon2.hash('not a real password', ARGON2_OPTIONS)));
  try {
    const ok = await argon2.verify(target, password.slice(0, MAX_PASSWORD_CHARS));
    return ok && hash !== undefined;
  } catch {
    return false;
  }
}

// No NUL: PostgreSQL text cannot hold one.
// eslint-disable-next-line no-control-regex -- NUL is what it refuses
const EMAIL = /^[^\s@\u0000]+@[^\s@\u0000]+\.[^\s@\u0000]+$/;

/** Trimmed, lower-cased, at most 254 characters and shaped like an address; else INVALID_EMAIL. */
export function normalizeEmail(input: string): string {
  const email = input.trim().toLowerCase();
  // 254 code points as sent (the documents' maxLength counts the body before trimming).
  if ([...input].length > 254 || !EMAIL.test(email)) throw new AppError('INVALID_EMAIL');
  return email;
}
