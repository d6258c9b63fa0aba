import { sql } from 'drizzle-orm';
import { bigserial, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

// The mail outbox: a row is written in the same transaction as what the mail is about, and a
// worker sends it later (see ./outbox.ts). Rows claimed by a worker carry a lease (claimed_until)
// so a crashed sender's mail is tried again by another replica.
export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** What the mail is, for logs and metrics (e.g. `form_submission`). */
    kind: text('kind').notNull(),
    /** The Message-ID header without angle brackets; also the key that makes enqueueing idempotent. */
    messageId: text('message_id').notNull(),
    recipient: text('recipient').notNull(),
    replyTo: text('reply_to'),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    html: text('html'),
    /** pending | sent | failed */
    status: text('status').notNull().default('pending'),
    /** Claims so far (a claim counts even when its sender died). */
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    claimedUntil: timestamp('claimed_until', { withTimezone: true }),
    /** The last failure: an error code and an SMTP reply with addresses removed, never the mail. */
    lastError: text('last_error'),
    /** Who the mail belongs to, e.g. `form:12`, so that domain can purge its rows. */
    source: text('source'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    sentAt: timestamp('sent_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('mail_outbox_message_id_key').on(t.messageId),
    index('mail_outbox_due_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'pending'`),
    index('mail_outbox_source_idx').on(t.source),
  ],
);

export type MailOutboxRow = typeof mailOutbox.$inferSelect;
