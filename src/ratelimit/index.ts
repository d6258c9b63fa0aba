import { lt } from 'drizzle-orm';
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
  return {
    async consume(key) {
      try {
        const res = await limiter.consume(key.slice(0, 200));
        return { allowed: true, remaining: res.remainingPoints };
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        rateLimitedTotal.inc({ limiter: limit.name });
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
      }
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
