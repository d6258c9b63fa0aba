import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new random credential with a readable prefix, e.g. `hp_live_…`. 256 bits of entropy. */
export function newSecret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/**
 * Credentials are high-entropy random strings, so a fast hash is enough: it stores nothing
 * reusable and lets the lookup use an index. The one-shot `hash` (the same hex SHA-256 as
 * createHash…digest) builds no Hash object: it runs on every call of a scoped SQLite token.
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/**
 * Constant-time comparison of a presented secret with a stored hash. The row was found by an
 * index search on the hash, whose timing can reveal at most how much of a sha256 digest matched
 * (nothing to work towards a key with); this final check keeps the accept decision itself free
 * of early exits, as the design asks.
 */
export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
