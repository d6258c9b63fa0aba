import { createHash, randomBytes } from 'node:crypto';
import { and, count, eq, gt, isNull, ne, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Platform } from '../platform/index.js';
import type { RateLimiter } from '../ratelimit/index.js';
import type { Db, Executor, Tx } from '../store/index.js';
import { notificationAddressEvents } from './metrics.js';
import { formNotificationAddresses, type FormRow, type NotificationAddressRow } from './tables.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** How long a confirmation link works. */
export const ADDRESS_LINK_TTL_MS = 7 * DAY_MS;
/** Addresses of one account waiting for confirmation (a live link out) at a time. */
export const MAX_PENDING_ADDRESSES = 10;
/** Confirmation mails: per account and address, and per account; across replicas (PostgreSQL). */
export const ADDRESS_MAIL_LIMITS = {
  perAddress: { name: 'form_address_mail', points: 3, durationSeconds: 3600 },
  perAccount: { name: 'form_address_mail_account', points: 20, durationSeconds: 24 * 3600 },
  /** Confirmation attempts per client address (the link's token is 256 random bits). */
  confirmPerClient: { name: 'form_address_confirm', points: 30, durationSeconds: 60 },
} as const;

/** What a confirmation mail says; the mail domain composes it (see src/server/wiring.ts). */
export interface AddressConfirmation {
  to: string;
  /** The account that asked (so the reader can judge). */
  accountEmail: string;
  formName: string;
  link: string;
  expiresAt: Date;
}
/** Queues the confirmation mail in the transaction that stores its token. */
export type ConfirmMailer = (tx: Tx, mail: AddressConfirmation) => Promise<void>;

/** Where a form's submissions are mailed, and whether that address may receive them yet. */
export interface AddressState {
  /** The address in effect: the form's, or the account's. */
  email: string;
  status: 'confirmed' | 'pending';
  /** When the last confirmation link was mailed; null when none was. */
  mailedAt: Date | null;
  /** The last link expired without being followed. */
  expired: boolean;
  /** This server sends no mail: nothing can be confirmed. */
  mailOff: boolean;
}

type Contact = { email: string; verified: boolean };
const normal = (email: string) => email.trim().toLowerCase();
const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Confirmation of the addresses forms mail (Formspree and Netlify confirm too): an address other
 * than the account's own verified email gets a one-time link first, and no submission mail until
 * it is followed. Confirmed once per account and address, for every form of the account.
 */
export class NotificationAddresses {
  constructor(
    private readonly db: Db,
    private readonly platform: Platform,
    private readonly options: {
      baseUrl: string;
      /** Undefined: the server sends no mail. */
      mailer: ConfirmMailer | undefined;
      limiters: { perAddress: RateLimiter; perAccount: RateLimiter; confirmPerClient: RateLimiter };
    },
  ) {}

  get mailOff(): boolean {
    return this.options.mailer === undefined;
  }

  /** The state of the form's address (its own, or the account's). */
  async stateOf(form: Pick<FormRow, 'accountId' | 'notificationEmail'>): Promise<AddressState> {
    const contact = await this.platform.accountContact(form.accountId);
    const email = form.notificationEmail ?? contact?.email ?? '';
    const base = { email, mailOff: this.mailOff };
    if (contact && isOwn(email, contact))
      return { ...base, status: 'confirmed', mailedAt: null, expired: false };
    const row = await this.row(form.accountId, email);
    return {
      ...base,
      status: row?.confirmedAt ? 'confirmed' : 'pending',
      mailedAt: row?.mailedAt ?? null,
      expired: !!row?.tokenExpiresAt && row.tokenExpiresAt.getTime() <= Date.now(),
    };
  }

  /** Whether submissions may be mailed to `email` for the account (read before the submit's transaction). */
  async isConfirmed(accountId: number, email: string, contact: Contact): Promise<boolean> {
    if (isOwn(email, contact)) return true;
    return !!(await this.row(accountId, email))?.confirmedAt;
  }

  /**
   * Before `email` is set on a form of the account: refused (403 LIMIT_REACHED) when the account
   * already has as many other addresses waiting as allowed. Its own and confirmed ones always pass.
   */
  async admit(accountId: number, email: string): Promise<void> {
    const contact = await this.platform.accountContact(accountId);
    if (contact && isOwn(email, contact)) return;
    if ((await this.row(accountId, email))?.confirmedAt) return;
    if ((await waitingBesides(this.db, accountId, email)) >= MAX_PENDING_ADDRESSES)
      throw new AppError('LIMIT_REACHED', {
        limit: MAX_PENDING_ADDRESSES,
        message: `This account has ${MAX_PENDING_ADDRESSES} notification addresses waiting for confirmation: wait until they are confirmed or their links expire (7 days), or use an address already confirmed.`,
      });
  }

  /**
   * Mails a confirmation link for the form's address when it needs one. `set` (the address was
   * just set): only when no live link is out, and silently not when throttled; `resend`: a new
   * link (earlier ones stop working), 429 when throttled, 409 when the server sends no mail.
   */
  async request(
    form: Pick<FormRow, 'accountId' | 'notificationEmail' | 'name'>,
    reason: 'set' | 'resend',
  ): Promise<AddressState> {
    const state = await this.stateOf(form);
    if (state.status === 'confirmed') return state;
    const mailer = this.options.mailer;
    if (!mailer) {
      if (reason === 'resend') throw new AppError('NOTIFICATION_MAIL_OFF');
      return state;
    }
    if (reason === 'set' && state.mailedAt && !state.expired) return state;
    const email = normal(state.email);
    const verdicts = [
      await this.options.limiters.perAddress.consume(`${form.accountId}:${email}`),
      await this.options.limiters.perAccount.consume(String(form.accountId)),
    ];
    const refused = verdicts.find((v) => !v.allowed);
    if (refused && !refused.allowed) {
      notificationAddressEvents.inc({ event: 'throttled' });
      if (reason === 'set') return state;
      throw new AppError('RATE_LIMITED', {
        message: 'Too many confirmation mails for this address or account; try again later.',
        retryAfterSeconds: refused.retryAfterSeconds,
      });
    }
    const contact = await this.platform.accountContact(form.accountId);
    const token = randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + ADDRESS_LINK_TTL_MS);
    const t = formNotificationAddresses;
    const mailedAt = await dbOp('form_address_link', () =>
      this.db.transaction(async (tx) => {
        // One account's links are issued one at a time, on every replica: `admit` read the count
        // before the form was written, so requests racing past it are held to the cap here (the
        // address stays pending without a link, as when throttled), and of two sets of one
        // address only the first mails.
        await tx.execute(sql`select pg_advisory_xact_lock(${ADDRESS_LOCK_CLASS}, ${form.accountId})`);
        const [current] = await tx
          .select()
          .from(t)
          .where(and(eq(t.accountId, form.accountId), eq(t.email, email)));
        if (current?.confirmedAt) return undefined;
        const live = !!current?.tokenExpiresAt && current.tokenExpiresAt.getTime() > Date.now();
        if (reason === 'set' && live) return undefined;
        if (reason === 'set' && (await waitingBesides(tx, form.accountId, email)) >= MAX_PENDING_ADDRESSES) {
          notificationAddressEvents.inc({ event: 'throttled' });
          return undefined;
        }
        const issued = { tokenHash: hashOf(token), tokenExpiresAt: expiresAt, mailedAt: sql`now()` };
        const [row] = await tx
          .insert(t)
          .values({ accountId: form.accountId, email, ...issued })
          .onConflictDoUpdate({
            target: [t.accountId, t.email],
            set: issued,
            setWhere: isNull(t.confirmedAt),
          })
          .returning();
        // Confirmed meanwhile: nothing to mail.
        if (!row) return undefined;
        await mailer(tx, {
          to: email,
          accountEmail: contact?.email ?? '',
          formName: form.name,
          link: `${this.options.baseUrl}/console/confirm-notification#token=${token}`,
          expiresAt,
        });
        return row.mailedAt;
      }),
    );
    if (!mailedAt) return this.stateOf(form);
    notificationAddressEvents.inc({ event: 'mailed' });
    return { ...state, mailedAt, expired: false };
  }

  /** Follows a link: the address is confirmed for the account it was mailed for. Once. */
  async confirm(token: string, clientKey: string): Promise<{ email: string }> {
    const verdict = await this.options.limiters.confirmPerClient.consume(clientKey);
    if (!verdict.allowed)
      throw new AppError('RATE_LIMITED', {
        message: 'Too many attempts from this address; try again in a minute.',
        retryAfterSeconds: verdict.retryAfterSeconds,
      });
    const t = formNotificationAddresses;
    const email = await dbOp('form_address_confirm', () =>
      this.db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(t)
          .where(eq(t.tokenHash, hashOf(token)))
          .for('update');
        if (!row) throw invalidLink('unknown');
        if (row.confirmedAt) throw invalidLink('used', row.email);
        if (!row.tokenExpiresAt || row.tokenExpiresAt.getTime() <= Date.now()) throw invalidLink('expired');
        await tx
          .update(t)
          .set({ confirmedAt: sql`now()` })
          .where(eq(t.id, row.id));
        return row.email;
      }),
    );
    notificationAddressEvents.inc({ event: 'confirmed' });
    return { email };
  }

  private async row(accountId: number, email: string): Promise<NotificationAddressRow | undefined> {
    const t = formNotificationAddresses;
    const [row] = await dbOp('form_address_get', () =>
      this.db
        .select()
        .from(t)
        .where(and(eq(t.accountId, accountId), eq(t.email, normal(email)))),
    );
    return row;
  }
}

/** Advisory lock class of an account's confirmation links (forms' own classes: 4201, here 4205). */
const ADDRESS_LOCK_CLASS = 4205;

/** How many other addresses of the account wait for confirmation with a live link. */
async function waitingBesides(db: Executor, accountId: number, email: string): Promise<number> {
  const t = formNotificationAddresses;
  const [waiting] = await db
    .select({ n: count() })
    .from(t)
    .where(
      and(
        eq(t.accountId, accountId),
        isNull(t.confirmedAt),
        gt(t.tokenExpiresAt, sql`now()`),
        ne(t.email, normal(email)),
      ),
    );
  return waiting?.n ?? 0;
}

/** The account's own address, once verified, needs no confirmation. */
function isOwn(email: string, contact: Contact): boolean {
  return contact.verified && normal(email) === normal(contact.email);
}

function invalidLink(reason: 'unknown' | 'used' | 'expired', email?: string): AppError {
  const message = {
    unknown:
      'This confirmation link is unknown: it may have been replaced by a newer one. Use the newest mail, or ask the form’s owner to send a new link.',
    used: `This link was already used: ${email ?? 'the address'} is confirmed and receives the form’s submissions.`,
    expired:
      'This confirmation link has expired (links work for 7 days): ask the form’s owner to send a new one.',
  }[reason];
  return new AppError('NOTIFICATION_LINK_INVALID', { why: reason, message });
}

/** What the owner reads about the address: where submissions go, or why they do not yet. */
export function addressMessage(state: AddressState): string {
  if (state.status === 'confirmed')
    return state.mailOff
      ? `This server sends no mail (SMTP is not configured): submissions are stored and listed here, not mailed to ${state.email}.`
      : `Submissions are mailed to ${state.email}.`;
  const held = 'submissions are stored but not mailed there until it is confirmed';
  if (state.mailOff)
    return `Waiting for confirmation: this server sends no mail (SMTP is not configured), so ${state.email} cannot be confirmed; ${held}.`;
  if (!state.mailedAt)
    return `Waiting for confirmation: no link has been mailed to ${state.email} yet (too many were sent recently, or the address was set outside the API); ${held}. Ask for a link.`;
  if (state.expired)
    return `Waiting for confirmation: the link we mailed ${state.email} expired; ${held}. Ask for a new link.`;
  // No raw timestamp: the console shows this sentence as it is.
  return `Waiting for confirmation: we mailed ${state.email} a link (it works for 7 days); ${held}.`;
}
