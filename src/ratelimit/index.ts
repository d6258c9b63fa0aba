import { and, eq, gt, lt, sql } from 'drizzle-orm';
import { RateLimiterDrizzle, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Db } from '../store/index.js';
import { rateLimits } from './tables.js';
import { rateLimitedTotal } from './metrics.js';

export interface RateLimit {
  /** Names the limiter in keys and metrics (bounded: one per kind of limit). */
  name: string;
  points: number;
  durationSeconds: number;
}

export type Verdict = { allowed: true; remaining: number } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiter {
  /** Counts one attempt for `key` (e.g. a client IP) and says whether it is allowed. */
  consume(key: string): Promise<Verdict>;
  /**
   * Gives back the point an allowed attempt consumed (it turned out not to count: a sign-in that
   * succeeded), within the current window only; never below zero. Best effort: a refund the
   * database cannot take is dropped (the attempt then stays counted).
   */
  refund(key: string): Promise<void>;
  /** Forgets every attempt counted for `key` in the current window. */
  reset(key: string): Promise<void>;
}

/**
 * A fixed-window limiter whose counters live in PostgreSQL (rate-limiter-flexible's drizzle
 * store), so every API replica counts against the same budget. If the database cannot be
 * reached, a per-process in-memory limiter with the same budget stands in (insurance), so a
 * blip neither opens the gate nor refuses everyone.
 */
export function createRateLimiter(db: Db, limit: RateLimit): RateLimiter {
  const options = { keyPrefix: limit.name, points: limit.points, duration: limit.durationSeconds };
  const limiter = new RateLimiterDrizzle({
    ...options,
    storeClient: db,
    schema: rateLimits,
    clearExpiredByTimeout: false, // expired rows go in the sweep below, once for all limiters
    insuranceLimiter: new RateLimiterMemory(options),
  });
  const keyOf = (key: string) => key.slice(0, 200);
  return {
    async consume(key) {
      try {
        const res = await limiter.consume(keyOf(key));
        return { allowed: true, remaining: res.remainingPoints };
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        rateLimitedTotal.inc({ limiter: limit.name });
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
      }
    },
    async refund(key) {
      // One statement on the counter the store wrote (the library's reward would open a new
      // window at -1 once the old one has ended, giving a point away).
      const stored = limiter.getKey(keyOf(key));
      await db
        .update(rateLimits)
        .set({ points: sql`greatest(${rateLimits.points} - 1, 0)` })
        .where(and(eq(rateLimits.key, stored), gt(rateLimits.expire, sql`now()`)))
        .catch(() => undefined);
    },
    async reset(key) {
      await limiter.delete(keyOf(key)).catch(() => undefined);
    },
  };
}

/** Deletes counters whose window ended more than a minute ago; returns how many went. */
export async function sweepRateLimits(db: Db): Promise<number> {
  const rows = await db
    .delete(rateLimits)
    .where(lt(rateLimits.expire, new Date(Date.now() - 60_000)))
    .returning({ key: rateLimits.key });
  return rows.length;
}
