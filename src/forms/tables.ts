import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
// Foreign keys are schema-level links, the one reach into another domain's tables lint allows.
import { accounts, sites } from '../platform/tables.js';

/** A field as stored inside its form (the form row is the unit of change, so fields live in it). */
export interface StoredField {
  id: string;
  name: string;
  label: string;
  type: 'text' | 'email' | 'tel' | 'number' | 'url' | 'textarea' | 'select';
  required: boolean;
  placeholder: string | null;
  options: string[] | null;
}

export const forms = pgTable(
  'forms',
  {
    id: serial('id').primaryKey(),
    uuid: uuid('uuid').notNull().defaultRandom(),
    siteId: integer('site_id')
      .notNull()
      .references(() => sites.id, { onDelete: 'cascade' }),
    // Kept beside the site: the plan's form count and submission quota are per account.
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    description: text('description'),
    isActive: boolean('is_active').notNull().default(true),
    successMessage: text('success_message'),
    redirectUrl: text('redirect_url'),
    // Null: the account's email.
    notificationEmail: text('notification_email'),
    fields: jsonb('fields').$type<StoredField[]>().notNull(),
    submissionCount: integer('submission_count').notNull().default(0),
    // Cluster mode: the uid of the Form resource that controls this form.
    resourceUid: text('resource_uid'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('forms_uuid_key').on(t.uuid),
    uniqueIndex('forms_site_slug_key').on(t.siteId, t.slug),
    index('forms_account_idx').on(t.accountId),
    uniqueIndex('forms_resource_uid_key').on(t.resourceUid),
  ],
);

export const formSubmissions = pgTable(
  'form_submissions',
  {
    id: serial('id').primaryKey(),
    uuid: uuid('uuid').notNull().defaultRandom(),
    formId: integer('form_id')
      .notNull()
      .references(() => forms.id, { onDelete: 'cascade' }),
    data: jsonb('data').$type<Record<string, string>>().notNull(),
    isSpam: boolean('is_spam').notNull(),
    spamScore: integer('spam_score').notNull(),
    spamReasons: jsonb('spam_reasons').$type<string[]>(),
    isArchived: boolean('is_archived').notNull().default(false),
    isRead: boolean('is_read').notNull().default(false),
    readAt: timestamp('read_at', { withTimezone: true }),
    submittedAt: timestamp('submitted_at', { withTimezone: true }).notNull().defaultNow(),
    // HMAC-SHA256 of the client IP under a server secret: comparable, not reversible.
    ipHash: text('ip_hash'),
    userAgent: text('user_agent'),
    referer: text('referer'),
    origin: text('origin'),
    // sha256 of the normalised field values, to spot repeated identical submissions.
    contentHash: text('content_hash').notNull(),
  },
  (t) => [
    uniqueIndex('form_submissions_uuid_key').on(t.uuid),
    index('form_submissions_form_time_idx').on(t.formId, t.submittedAt),
    index('form_submissions_content_idx').on(t.formId, t.contentHash, t.submittedAt),
    index('form_submissions_ip_idx').on(t.formId, t.ipHash, t.submittedAt),
  ],
);

// Accepted (non-spam) submissions per account and calendar month (UTC), counted atomically.
export const formSubmissionUsage = pgTable(
  'form_submission_usage',
  {
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    month: text('month').notNull(),
    count: integer('count').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.month] })],
);

/**
 * Notification addresses an account asked to mail, and whether their owner confirmed them: one
 * row per (account, address), so an address confirmed once serves every form of the account. The
 * account's own verified email needs no row. The link's token is stored as its sha256; the hash
 * stays after use, so a second use is told apart from an unknown link.
 */
export const formNotificationAddresses = pgTable(
  'form_notification_addresses',
  {
    id: serial('id').primaryKey(),
    accountId: integer('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    /** Lower case. */
    email: text('email').notNull(),
    confirmedAt: timestamp('confirmed_at', { withTimezone: true }),
    /** sha256 (hex) of the last link's token; null until a link was mailed. */
    tokenHash: text('token_hash'),
    tokenExpiresAt: timestamp('token_expires_at', { withTimezone: true }),
    /** When the last link was mailed (queued); null: never (mail off, throttled). */
    mailedAt: timestamp('mailed_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('form_notification_addresses_account_email_key').on(t.accountId, t.email),
    uniqueIndex('form_notification_addresses_token_key').on(t.tokenHash),
  ],
);

export type FormRow = typeof forms.$inferSelect;
export type NotificationAddressRow = typeof formNotificationAddresses.$inferSelect;
export type SubmissionRow = typeof formSubmissions.$inferSelect;
