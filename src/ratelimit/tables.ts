import { integer, pgTable, timestamp, varchar } from 'drizzle-orm/pg-core';

// Rate-limit counters shared by every replica, in the shape rate-limiter-flexible's drizzle store
// reads and writes: the key, the points consumed in the window, and when the window ends.
export const rateLimits = pgTable('rate_limits', {
  key: varchar('key', { length: 255 }).primaryKey(),
  points: integer('points').notNull().default(0),
  expire: timestamp('expire', { withTimezone: true }),
});
