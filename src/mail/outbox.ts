import { randomUUID } from 'node:crypto';
import { and, eq, lt, sql } from 'drizzle-orm';
import type { Db, Executor } from '../store/index.js';
import type { Logger } from '../observability/index.js';
import { withSpan } from '../observability/index.js';
import { ERASED_BODY, holdsOneTimeLink } from './account-mail.js';
import { mailSendDuration, mailSendFailures, setOutboxStatsSource, type OutboxStats } from './metrics.js';
import { mailOutbox, type MailOutboxRow } from './tables.js';
import { smtpTransport, type MailTransport } from './transport.js';

export interface MailMessage {
  /** What the mail is, for logs and metrics, e.g. `form_submission`. */
  kind: string;
  /** Without angle brackets; enqueueing the same id twice keeps one row. Default: a random id. */
  messageId?: string | undefined;
  to: string;
  replyTo?: string | undefined;
  subject: string;
  text: string;
  html?: string | undefined;
  /** Who the mail belongs to, e.g. `form:12` (see purgeBySource). */
  source?: string | undefined;
}

/**
 * Queues a mail: one row, written with the caller's transaction so the mail exists exactly when
 * what it tells about does. Returns the row id, or null when a mail with that Message-ID is
 * already queued. No network here: the worker sends later.
 */
export async function enqueue(db: Executor, message: MailMessage): Promise<number | null> {
  const rows = await db
    .insert(mailOutbox)
    .values({
      kind: message.kind,
      messageId: message.messageId ?? `${randomUUID()}@hostplane`,
      recipient: message.to,
      replyTo: message.replyTo ?? null,
      subject: message.subject,
      text: message.text,
      html: message.html ?? null,
      source: message.source ?? null,
    })
    .onConflictDoNothing({ target: mailOutbox.messageId })
    .returning({ id: mailOutbox.id });
  return rows[0]?.id ?? null;
}

/** Deletes every mail of `source` (sent, pending or failed); returns how many. */
export async function purgeBySource(db: Executor, source: string): Promise<number> {
  const rows = await db
    .delete(mailOutbox)
    .where(eq(mailOutbox.source, source))
    .returning({ id: mailOutbox.id });
  return rows.length;
}

export interface MailSettings {
  /** Unset: mails are logged (no recipient, no body) and stay pending. */
  smtpUrl: string | undefined;
  /** The From header, e.g. `Hostplane <noreply@example.com>`. */
  from: string;
  /** Sends tried before a mail is marked failed. */
  maxAttempts: number;
  /** Back-off after the first failure; doubled after each further one, up to maxRetryDelayMs. */
  retryBaseMs: number;
  maxRetryDelayMs?: number;
  /** How long a claim holds a mail; past it another worker may take the mail (the sender died). */
  leaseMs?: number;
  /** Mails claimed per round trip. */
  batchSize?: number;
}

/** The outbox worker: claims due mails (FOR UPDATE SKIP LOCKED, with a lease) and sends them. */
export class MailOutbox {
  /** A transport for one round of sends; its connection is closed when the round ends. */
  private readonly openTransport: (() => MailTransport) | undefined;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private readonly maxRetryDelayMs: number;
  private running: Promise<number> | undefined;
  /** Without SMTP each queued mail is logged once per process. */
  private lastLoggedId = 0;

  constructor(
    private readonly db: Db,
    private readonly settings: MailSettings,
    private readonly logger: Logger,
    transport?: MailTransport,
  ) {
    const smtpUrl = settings.smtpUrl;
    this.openTransport = transport ? () => transport : smtpUrl ? () => smtpTransport(smtpUrl) : undefined;
    this.leaseMs = settings.leaseMs ?? 120_000;
    this.batchSize = settings.batchSize ?? 10;
    this.maxRetryDelayMs = settings.maxRetryDelayMs ?? 3_600_000;
    setOutboxStatsSource(() => this.stats());
  }

  /**
   * Sends every due mail; returns how many were sent. Calls that overlap in one process share the
   * running round; several processes share the work through the claims.
   */
  deliverDue(): Promise<number> {
    this.running ??= (this.openTransport ? this.sendAll(this.openTransport) : this.logPending()).finally(
      () => {
        this.running = undefined;
      },
    );
    return this.running;
  }

  /** Depth and age of the outbox, for the gauges. */
  async stats(): Promise<OutboxStats> {
    const [row] = await this.db
      .select({
        pending: sql<number>`count(*) filter (where ${mailOutbox.status} = 'pending')`.mapWith(Number),
        failed: sql<number>`count(*) filter (where ${mailOutbox.status} = 'failed')`.mapWith(Number),
        oldest:
          sql<number>`coalesce(extract(epoch from now() - min(${mailOutbox.createdAt}) filter (where ${mailOutbox.status} = 'pending')), 0)`.mapWith(
            Number,
          ),
      })
      .from(mailOutbox)
      .where(sql`${mailOutbox.status} <> 'sent'`);
    return { pending: row?.pending ?? 0, failed: row?.failed ?? 0, oldestPendingSeconds: row?.oldest ?? 0 };
  }

  /** Deletes sent mails older than `ageMs` (they hold what visitors wrote); returns how many. */
  async sweepSent(ageMs: number): Promise<number> {
    const before = new Date(Date.now() - ageMs);
    const rows = await this.db
      .delete(mailOutbox)
      .where(and(eq(mailOutbox.status, 'sent'), lt(mailOutbox.sentAt, before)))
      .returning({ id: mailOutbox.id });
    return rows.length;
  }

  close(): void {
    setOutboxStatsSource(undefined);
  }

  /**
   * Sends until nothing is due. One SMTP connection serves the whole round (opened at the first
   * mail) and is closed at its end, so no socket outlives a round.
   */
  private async sendAll(openTransport: () => MailTransport): Promise<number> {
    let sent = 0;
    let transport: MailTransport | undefined;
    try {
      for (;;) {
        const batch = await this.claim();
        for (const row of batch) if (await this.sendOne((transport ??= openTransport()), row)) sent++;
        if (batch.length < this.batchSize) return sent;
      }
    } finally {
      transport?.close();
    }
  }

  /**
   * Claims due mails in one statement (its own short transaction): rows another worker holds are
   * skipped, and each claim bumps `attempts`, which also fences the later update to this claim.
   */
  private async claim(): Promise<MailOutboxRow[]> {
    const leaseSeconds = this.leaseMs / 1000;
    const result = await this.db.execute(sql`
      update mail_outbox set attempts = attempts + 1,
        claimed_until = now() + make_interval(secs => ${leaseSeconds})
      where id in (
        select id from mail_outbox
        where status = 'pending' and next_attempt_at <= now()
          and (claimed_until is null or claimed_until < now())
        order by next_attempt_at, id
        limit ${this.batchSize}
        for update skip locked)
      returning id`);
    const ids = rowsOf(result).map((r) => Number(r.id));
    if (ids.length === 0) return [];
    return this.db
      .select()
      .from(mailOutbox)
      .where(
        sql`${mailOutbox.id} in (${sql.join(
          ids.map((id) => sql`${id}`),
          sql`, `,
        )})`,
      )
      .orderBy(mailOutbox.id);
  }

  /** Sends one claimed mail and records the outcome; true when sent. */
  private async sendOne(transport: MailTransport, row: MailOutboxRow): Promise<boolean> {
    const started = performance.now();
    const mine = and(eq(mailOutbox.id, row.id), eq(mailOutbox.attempts, row.attempts));
    try {
      await withSpan('mail.send', { 'mail.kind': row.kind, 'mail.attempt': row.attempts }, () =>
        transport.send({
          from: this.settings.from,
          to: row.recipient,
          replyTo: row.replyTo ?? undefined,
          subject: row.subject,
          text: row.text,
          html: row.html ?? undefined,
          messageId: row.messageId,
        }),
      );
    } catch (err) {
      mailSendDuration.observe({ outcome: 'failed' }, (performance.now() - started) / 1000);
      const permanent = smtpResponseCode(err) >= 500;
      const giveUp = permanent || row.attempts >= this.settings.maxAttempts;
      const delay = Math.min(this.settings.retryBaseMs * 2 ** (row.attempts - 1), this.maxRetryDelayMs);
      await this.db
        .update(mailOutbox)
        .set({
          status: giveUp ? 'failed' : 'pending',
          ...(giveUp ? erased(row.kind) : {}),
          lastError: describeError(err),
          claimedUntil: null,
          nextAttemptAt: giveUp ? sql`now()` : sql`now() + make_interval(secs => ${delay / 1000})`,
        })
        .where(mine);
      mailSendFailures.inc({ result: giveUp ? 'gave_up' : 'retry' });
      this.logger.warn(
        { mailId: row.id, kind: row.kind, attempt: row.attempts, error: describeError(err), gaveUp: giveUp },
        giveUp ? 'mail not sent: gave up' : 'mail not sent: will retry',
      );
      return false;
    }
    mailSendDuration.observe({ outcome: 'sent' }, (performance.now() - started) / 1000);
    await this.db
      .update(mailOutbox)
      .set({ status: 'sent', sentAt: sql`now()`, claimedUntil: null, lastError: null, ...erased(row.kind) })
      .where(mine);
    this.logger.info({ mailId: row.id, kind: row.kind, attempt: row.attempts }, 'mail sent');
    return true;
  }

  /** Without SMTP: each pending mail is logged once (id and kind only) and left in the outbox. */
  private async logPending(): Promise<number> {
    const rows = await this.db
      .select({ id: mailOutbox.id, kind: mailOutbox.kind })
      .from(mailOutbox)
      .where(and(eq(mailOutbox.status, 'pending'), sql`${mailOutbox.id} > ${this.lastLoggedId}`))
      .orderBy(mailOutbox.id)
      .limit(100);
    for (const row of rows) {
      this.logger.info({ mailId: row.id, kind: row.kind }, 'mail queued; not sent: SMTP_URL is not set');
      this.lastLoggedId = row.id;
    }
    return 0;
  }
}

/** A handled mail's bodies blanked when they hold a one-time link (nothing changes otherwise). */
function erased(kind: string): { text?: string; html?: null } {
  return holdsOneTimeLink(kind) ? { text: ERASED_BODY, html: null } : {};
}

/** The rows of a `db.execute` result: node-postgres returns `{rows}`, PGlite too. */
function rowsOf(result: unknown): Array<Record<string, unknown>> {
  return ((result as { rows?: Array<Record<string, unknown>> }).rows ?? []) as Array<Record<string, unknown>>;
}

function smtpResponseCode(err: unknown): number {
  const code = (err as { responseCode?: unknown }).responseCode;
  return typeof code === 'number' ? code : 0;
}

/** An error for the row and the log: its code and message with any address removed, clipped. */
export function describeError(err: unknown): string {
  const e = err as { code?: unknown; responseCode?: unknown; message?: unknown };
  const parts = [
    typeof e.code === 'string' ? e.code : undefined,
    typeof e.responseCode === 'number' ? String(e.responseCode) : undefined,
    typeof e.message === 'string' ? e.message : String(err),
  ].filter(Boolean);
  const text = parts.join(' ').replace(/[^\s<>"'(),;:]+@[^\s<>"'(),;:]+/g, '<address>');
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}
