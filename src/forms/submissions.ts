import { createHmac } from 'node:crypto';
import { and, count, desc, eq, gt, gte, lte, sql, type SQL } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp, withSpan } from '../observability/index.js';
import { planFor, type Platform } from '../platform/index.js';
import type { Db, Tx } from '../store/index.js';
import { scoreSubmission, type SpamScore } from './spam.js';
import { formSubmissions, formSubmissionUsage, forms, type FormRow, type SubmissionRow } from './tables.js';
import { checkValues, contentHash, parseStartedAt, trapValue } from './values.js';
import type { NotificationAddresses } from './addresses.js';
import { notificationMails, submissionsTotal } from './metrics.js';

/** What the owner is mailed about an accepted submission; the mail domain turns it into a message. */
export interface SubmissionNotice {
  form: Pick<FormRow, 'id' | 'uuid' | 'name' | 'siteId'>;
  to: string;
  replyTo: string | undefined;
  fields: Array<{ name: string; label: string; value: string }>;
  submission: Pick<SubmissionRow, 'id' | 'uuid' | 'submittedAt'>;
}

/** Queues the notice inside the submission's transaction (an outbox row), so it is sent once. */
export type Notify = (tx: Tx, notice: SubmissionNotice) => Promise<void>;

export interface SubmitRequest {
  /** The posted body: one key per field, plus `_t_trap` and `_t_start`. */
  body: Record<string, unknown>;
  ip: string;
  userAgent?: string;
  referer?: string;
  origin?: string;
}

export interface SubmissionFilters {
  isSpam?: boolean;
  isArchived?: boolean;
  isRead?: boolean;
  from?: Date;
  to?: Date;
}

export interface MonthUsage {
  month: string;
  used: number;
  limit: number;
  resetsAt: Date;
}

const IP_HASH_SECRET = 'form_submission_ip';

/** Public submissions (scored, counted against the plan, queued for mail) and the owner's view of them. */
export class Submissions {
  constructor(
    private readonly db: Db,
    private readonly platform: Platform,
    private readonly notify?: Notify,
    /** Without it every address is mailed (tests of the submission path alone). */
    private readonly addresses?: NotificationAddresses,
  ) {}

  async submit(form: FormRow, request: SubmitRequest): Promise<{ row: SubmissionRow; spam: SpamScore }> {
    if (!form.isActive) throw new AppError('FORM_INACTIVE');
    const data = checkValues(form.fields, request.body);
    const ipHash = createHmac('sha256', await this.platform.serverSecret(IP_HASH_SECRET))
      .update(request.ip)
      .digest('hex');
    const hash = contentHash(data);
    const recent = await this.recentCounts(form.id, hash, ipHash);
    const spam = await withSpan('forms.score', { 'form.id': form.id }, async () =>
      scoreSubmission({
        data,
        fieldTypes: Object.fromEntries(form.fields.map((f) => [f.name, f.type])),
        trap: trapValue(request.body._t_trap),
        startedAt: parseStartedAt(request.body._t_start),
        startSent: request.body._t_start !== undefined && request.body._t_start !== null,
        now: Date.now(),
        identicalRecentCount: recent.identical,
        ipRecentCount: recent.fromIp,
      }),
    );
    // Read before the transaction: PGlite has one connection, so no other query may run inside it.
    const contact = await this.platform.accountContact(form.accountId);
    const to = contact ? (form.notificationEmail ?? contact.email) : undefined;
    // An address not confirmed yet gets no submission mail (not later either: the list has them).
    const mailed =
      to !== undefined && contact && this.notify && !spam.isSpam
        ? ((await this.addresses?.isConfirmed(form.accountId, to, contact)) ?? true)
        : false;
    const row = await dbOp('form_submit', () =>
      this.db.transaction(async (tx) => {
        // Spam is stored but not counted: a spammer cannot use up the account's monthly quota.
        if (!spam.isSpam) await this.countAgainstQuota(tx, form.accountId, contact?.plan);
        const [inserted] = await tx
          .insert(formSubmissions)
          .values({
            formId: form.id,
            data,
            isSpam: spam.isSpam,
            spamScore: spam.score,
            spamReasons: spam.reasons.length > 0 ? spam.reasons : null,
            ipHash,
            userAgent: clip(request.userAgent, 512),
            referer: clip(request.referer, 2048),
            origin: clip(request.origin, 512),
            contentHash: hash,
          })
          .returning();
        await tx
          .update(forms)
          .set({ submissionCount: sql`${forms.submissionCount} + 1` })
          .where(eq(forms.id, form.id));
        if (mailed && to !== undefined && this.notify) {
          const replyField = form.fields.find((f) => f.type === 'email' && data[f.name]);
          await this.notify(tx, {
            form,
            to,
            replyTo: replyField ? data[replyField.name] : undefined,
            fields: form.fields.map((f) => ({ name: f.name, label: f.label, value: data[f.name] ?? '' })),
            submission: inserted!,
          });
        }
        return inserted!;
      }),
    );
    submissionsTotal.inc({ result: spam.isSpam ? 'spam' : 'accepted' });
    if (to !== undefined && !spam.isSpam && this.notify)
      notificationMails.inc({ result: mailed ? 'queued' : 'withheld' });
    return { row, spam };
  }

  /** This month's accepted submissions of the account against its plan. */
  async monthUsage(accountId: number, now = new Date()): Promise<MonthUsage> {
    const contact = await this.platform.accountContact(accountId);
    const { month, resetsAt } = monthOf(now);
    const [row] = await this.db
      .select({ count: formSubmissionUsage.count })
      .from(formSubmissionUsage)
      .where(and(eq(formSubmissionUsage.accountId, accountId), eq(formSubmissionUsage.month, month)));
    const limit = planLimit(contact?.plan);
    return { month, used: row?.count ?? 0, limit, resetsAt };
  }

  async list(
    formId: number,
    filters: SubmissionFilters,
    page: number,
    perPage: number,
  ): Promise<{ rows: SubmissionRow[]; total: number }> {
    const where = and(eq(formSubmissions.formId, formId), ...filterConditions(filters));
    return dbOp('submissions_list', async () => {
      const [counted] = await this.db.select({ n: count() }).from(formSubmissions).where(where);
      const rows = await this.db
        .select()
        .from(formSubmissions)
        .where(where)
        .orderBy(desc(formSubmissions.submittedAt), desc(formSubmissions.id))
        .limit(perPage)
        .offset((page - 1) * perPage);
      return { rows, total: counted?.n ?? 0 };
    });
  }

  /** Counts over all the form's submissions (filters do not apply): spec 2.6 `stats`. */
  async stats(formId: number) {
    const [row] = await dbOp('submissions_stats', () =>
      this.db
        .select({
          total: count(),
          spam: sql<number>`count(*) filter (where ${formSubmissions.isSpam})`.mapWith(Number),
          archived: sql<number>`count(*) filter (where ${formSubmissions.isArchived})`.mapWith(Number),
          unread:
            sql<number>`count(*) filter (where not ${formSubmissions.isRead} and not ${formSubmissions.isSpam})`.mapWith(
              Number,
            ),
          legitimate: sql<number>`count(*) filter (where not ${formSubmissions.isSpam})`.mapWith(Number),
        })
        .from(formSubmissions)
        .where(eq(formSubmissions.formId, formId)),
    );
    return row ?? { total: 0, spam: 0, archived: 0, unread: 0, legitimate: 0 };
  }

  async get(formId: number, uuid: string): Promise<SubmissionRow> {
    if (!isUuid(uuid)) throw submissionNotFound(uuid);
    const [row] = await this.db
      .select()
      .from(formSubmissions)
      .where(and(eq(formSubmissions.formId, formId), eq(formSubmissions.uuid, uuid.toLowerCase())));
    if (!row) throw submissionNotFound(uuid);
    return row;
  }

  /** Marks a submission read/unread, spam/not spam, archived/unarchived. */
  async update(
    formId: number,
    uuid: string,
    changes: { is_spam?: boolean; is_read?: boolean; is_archived?: boolean },
  ): Promise<SubmissionRow> {
    if (!isUuid(uuid)) throw submissionNotFound(uuid);
    const set: { isSpam?: boolean; isArchived?: boolean; isRead?: boolean; readAt?: SQL | null } = {};
    if (changes.is_spam !== undefined) set.isSpam = changes.is_spam;
    if (changes.is_archived !== undefined) set.isArchived = changes.is_archived;
    if (changes.is_read !== undefined) {
      set.isRead = changes.is_read;
      // Keeps the first time it was read; cleared when marked unread again.
      set.readAt = changes.is_read ? sql`coalesce(${formSubmissions.readAt}, now())` : null;
    }
    const [row] = await this.db
      .update(formSubmissions)
      .set(set)
      .where(and(eq(formSubmissions.formId, formId), eq(formSubmissions.uuid, uuid.toLowerCase())))
      .returning();
    if (!row) throw submissionNotFound(uuid);
    return row;
  }

  async delete(formId: number, uuid: string): Promise<void> {
    if (!isUuid(uuid)) throw submissionNotFound(uuid);
    await this.db.transaction(async (tx) => {
      const [row] = await tx
        .delete(formSubmissions)
        .where(and(eq(formSubmissions.formId, formId), eq(formSubmissions.uuid, uuid.toLowerCase())))
        .returning({ id: formSubmissions.id });
      if (!row) throw submissionNotFound(uuid);
      await tx
        .update(forms)
        .set({ submissionCount: sql`greatest(${forms.submissionCount} - 1, 0)` })
        .where(eq(forms.id, formId));
    });
  }

  /** Pages through the form's submissions in id order (for the CSV export), `batch` rows at a time. */
  async *each(formId: number, filters: SubmissionFilters, batch = 500): AsyncGenerator<SubmissionRow> {
    let after = 0;
    for (;;) {
      const rows = await this.db
        .select()
        .from(formSubmissions)
        .where(
          and(
            eq(formSubmissions.formId, formId),
            gt(formSubmissions.id, after),
            ...filterConditions(filters),
          ),
        )
        .orderBy(formSubmissions.id)
        .limit(batch);
      yield* rows;
      if (rows.length < batch) return;
      after = rows[rows.length - 1]!.id;
    }
  }

  /**
   * Counts one accepted submission against the account's month, atomically: the conditional
   * upsert takes the counter row's lock, so concurrent submissions at the edge never overshoot.
   */
  private async countAgainstQuota(tx: Tx, accountId: number, plan: string | undefined): Promise<void> {
    const limit = planLimit(plan);
    const { month, resetsAt } = monthOf(new Date());
    const counted = await tx.execute<{ count: number }>(sql`
      insert into ${formSubmissionUsage} (account_id, month, count) values (${accountId}, ${month}, 1)
      on conflict (account_id, month) do update set count = ${formSubmissionUsage}.count + 1
      where ${formSubmissionUsage}.count < ${limit}
      returning count`);
    if (rowsOf(counted).length === 0) {
      submissionsTotal.inc({ result: 'limited' });
      throw new AppError('SUBMISSION_LIMIT', {
        used: limit,
        limit,
        plan: plan ?? 'free',
        resetsAt: resetsAt.toISOString(),
      });
    }
  }

  private async recentCounts(formId: number, hash: string, ipHash: string) {
    const [row] = await dbOp('submissions_recent', () =>
      this.db
        .select({
          identical: sql<number>`count(*) filter (where ${formSubmissions.contentHash} = ${hash})`.mapWith(
            Number,
          ),
          fromIp:
            sql<number>`count(*) filter (where ${formSubmissions.ipHash} = ${ipHash} and ${formSubmissions.submittedAt} > now() - interval '10 minutes')`.mapWith(
              Number,
            ),
        })
        .from(formSubmissions)
        .where(
          and(
            eq(formSubmissions.formId, formId),
            sql`${formSubmissions.submittedAt} > now() - interval '24 hours'`,
          ),
        ),
    );
    return row ?? { identical: 0, fromIp: 0 };
  }
}

/** The plan's monthly submissions (free when the account is unknown). */
function planLimit(plan: string | undefined): number {
  return planFor(plan ?? 'free').maxSubmissionsPerMonth;
}

/** The UTC calendar month of `now` ('YYYY-MM') and the instant it ends. */
export function monthOf(now: Date): { month: string; resetsAt: Date } {
  const month = now.toISOString().slice(0, 7);
  const resetsAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { month, resetsAt };
}

function filterConditions(filters: SubmissionFilters): SQL[] {
  const conditions: SQL[] = [];
  if (filters.isSpam !== undefined) conditions.push(eq(formSubmissions.isSpam, filters.isSpam));
  if (filters.isArchived !== undefined) conditions.push(eq(formSubmissions.isArchived, filters.isArchived));
  if (filters.isRead !== undefined) conditions.push(eq(formSubmissions.isRead, filters.isRead));
  if (filters.from) conditions.push(gte(formSubmissions.submittedAt, filters.from));
  if (filters.to) conditions.push(lte(formSubmissions.submittedAt, filters.to));
  return conditions;
}

function rowsOf<T>(result: unknown): T[] {
  // node-postgres returns { rows }, PGlite returns { rows } too; drizzle passes them through.
  return ((result as { rows?: T[] }).rows ?? (result as T[])) as T[];
}

function clip(value: string | undefined, max: number): string | null {
  return value ? value.slice(0, max) : null;
}

function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

function submissionNotFound(uuid: string): AppError {
  return new AppError('NOT_FOUND', { message: `Submission ${uuid.slice(0, 64)} not found in this form.` });
}
