import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

// Temporary pages published without a credential.
export const tempPages = pgTable(
  'temp_pages',
  {
    id: text('id').primaryKey(),
    html: text('html').notNull(),
    title: text('title'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('temp_pages_expiry_idx').on(t.expiresAt)],
);
