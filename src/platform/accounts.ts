import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import { checkPassword, hashPassword, normalizeEmail, verifyPassword } from '../passwords/index.js';
import type { Db, Executor } from '../store/index.js';
import { planFor, type PlanType } from './plans.js';
import { hashSecret, newSecret } from './secrets.js';
import { Sessions, type SessionKind } from './sessions.js';
import { accountTokens, accounts, sites } from './tables.js';

export type AccountTokenKind = 'invite' | 'verify' | 'reset';

const HOUR = 3600_000;
/** How long each mailed link works. */
export const TOKEN_LIFETIME_MS: Record<AccountTokenKind, number> = {
  invite: 7 * 24 * HOUR,
  verify: 24 * HOUR,
  reset: HOUR,
};

/**
 * A mail to an owner with a one-time link (written to the outbox in the caller's transaction), or
 * (`taken`) the note that someone tried to sign up with their address, linking to the reset page.
 */
export interface AccountMail {
  kind: AccountTokenKind | 'taken';
  to: string;
  link: string;
  expiresAt: Date;
}
export type AccountMailer = (tx: Executor, mail: AccountMail) => Promise<void>;

export interface AccountProfile {
  id: number;
  email: string;
  plan: PlanType;
  emailVerified: boolean;
  hasPassword: boolean;
  createdAt: Date;
}

export interface AccountOptions {
  /** The API's base URL: the links point at its console pages. */
  baseUrl: string;
  /** Sends the account mails; without it they are not sent (the invite command prints its link). */
  mailer?: AccountMailer | undefined;
}

/** Where a mailed token is used: a page of the console, with the token in the fragment (never sent to a server log). */
const PAGES: Record<AccountTokenKind, string> = { invite: 'invite', verify: 'verify', reset: 'reset' };

/**
 * Owner accounts: email + password (argon2id, src/passwords), invitations, address verification,
 * password resets, and their sessions. One-time tokens are stored as hashes and used at most once.
 */
export class Accounts {
  readonly sessions: Sessions;

  constructor(
    private readonly db: Db,
    private readonly options: AccountOptions = { baseUrl: 'http://localhost:8080' },
  ) {
    this.sessions = new Sessions(db);
  }

  linkFor(kind: AccountTokenKind, token: string): string {
    return `${this.options.baseUrl}/console/${PAGES[kind]}#token=${token}`;
  }

  /** An operator's bearer session for `email` (`hostplane admin session`). */
  async createSession(email: string): Promise<{ token: string; expiresAt: Date }> {
    const account = await this.byEmail(email.trim().toLowerCase());
    if (!account) throw new AppError('UNKNOWN_ACCOUNT', { email });
    return this.sessions.create(this.db, account.id, 'bearer', { operator: true });
  }

  /**
   * The account's owner address and plan (forms mail their notifications there by default), and
   * whether the address is verified (only then does it get form mail without a confirmation).
   */
  async contact(
    accountId: number,
  ): Promise<{ email: string; plan: PlanType; verified: boolean } | undefined> {
    const profile = await this.profile(accountId);
    return profile
      ? { email: profile.email, plan: profile.plan, verified: profile.emailVerified }
      : undefined;
  }

  async profile(accountId: number): Promise<AccountProfile | undefined> {
    const [row] = await this.db.select().from(accounts).where(eq(accounts.id, accountId));
    if (!row) return undefined;
    return {
      id: row.id,
      email: row.email,
      plan: planFor(row.plan).type,
      emailVerified: row.emailVerifiedAt !== null,
      hasPassword: row.passwordHash !== null,
      createdAt: row.createdAt,
    };
  }

  /**
   * `admin invite`: the account (created without a password when new; `plan` applies to a new one
   * and changes an existing one's) and a one-time link that sets its password.
   */
  async invite(input: { email: string; plan?: PlanType | undefined }): Promise<{
    accountId: number;
    link: string;
    expiresAt: Date;
    mailed: boolean;
  }> {
    const email = normalizeEmail(input.email);
    return dbOp('invite_account', () =>
      this.db.transaction(async (tx) => {
        await tx
          .insert(accounts)
          .values({ email, plan: input.plan ?? 'free' })
          .onConflictDoNothing();
        const [account] = await tx.select().from(accounts).where(eq(accounts.email, email));
        if (!account) throw new Error('account upsert returned no row');
        if (account.passwordHash !== null) throw new AppError('ACCOUNT_EXISTS', { email });
        if (input.plan && account.plan !== input.plan)
          await tx.update(accounts).set({ plan: input.plan }).where(eq(accounts.id, account.id));
        const { link, expiresAt, mailed } = await this.issue(tx, account.id, email, 'invite');
        return { accountId: account.id, link, expiresAt, mailed };
      }),
    );
  }

  /** Open sign-up: an unverified account with its password, and the verification mail. */
  async signUp(emailInput: string, password: string): Promise<void> {
    const email = normalizeEmail(emailInput);
    checkPassword(password, [email]);
    // Hashed whether or not the address is taken: the answer and its timing say nothing.
    const passwordHash = await hashPassword(password);
    await dbOp('sign_up', () =>
      this.db.transaction(async (tx) => {
        const [created] = await tx
          .insert(accounts)
          .values({ email, passwordHash })
          .onConflictDoNothing()
          .returning({ id: accounts.id });
        if (created) await this.issue(tx, created.id, email, 'verify');
        // Taken: the same answer, and the owner (not the visitor) hears of it.
        else
          await this.options.mailer?.(tx, {
            kind: 'taken',
            to: email,
            link: `${this.options.baseUrl}/console/forgot`,
            expiresAt: new Date(),
          });
      }),
    );
  }

  /**
   * Sets the password of an invited account; the mailed link proves the address. Only while the
   * account has no password (one set by a reset makes the invitation void); every earlier session
   * (an operator's `admin session`) ends, with the temporary keys it minted.
   */
  async acceptInvite(token: string, password: string): Promise<number> {
    checkPassword(password, await this.tokenContext(token, 'invite'));
    const passwordHash = await hashPassword(password);
    return this.db.transaction(async (tx) => {
      const accountId = await this.consume(tx, token, 'invite');
      const set = await tx
        .update(accounts)
        .set({ passwordHash, emailVerifiedAt: sql`coalesce(${accounts.emailVerifiedAt}, now())` })
        .where(and(eq(accounts.id, accountId), isNull(accounts.passwordHash)))
        .returning({ id: accounts.id });
      if (set.length === 0) throw new AppError('INVALID_TOKEN');
      await this.sessions.endAll(tx, accountId);
      return accountId;
    });
  }

  async verifyEmail(token: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const accountId = await this.consume(tx, token, 'verify');
      await tx
        .update(accounts)
        .set({ emailVerifiedAt: sql`coalesce(${accounts.emailVerifiedAt}, now())` })
        .where(eq(accounts.id, accountId));
    });
  }

  /** A new verification mail (earlier links stop working); nothing when already verified. */
  async resendVerification(accountId: number): Promise<void> {
    const profile = await this.profile(accountId);
    if (!profile || profile.emailVerified) return;
    await this.db.transaction((tx) =>
      this.issue(tx, accountId, profile.email, 'verify').then(() => undefined),
    );
  }

  /** The account of `email` when `password` is its password; one error (and time) for every failure. */
  async signIn(emailInput: string, password: string): Promise<number> {
    const email = emailInput.trim().toLowerCase().slice(0, 254);
    const account = await this.byEmail(email);
    const ok = await verifyPassword(account?.passwordHash ?? undefined, password);
    if (!account || !ok) throw new AppError('INVALID_CREDENTIALS');
    return account.id;
  }

  /** The id of the account of `email` (as sign-in normalizes it), if there is one. */
  async idOfEmail(emailInput: string): Promise<number | undefined> {
    return (await this.byEmail(emailInput.trim().toLowerCase().slice(0, 254)))?.id;
  }

  /** Re-checks the signed-in owner's password before a sensitive change (TOTP setup, disable). */
  async checkOwnPassword(accountId: number, password: string): Promise<void> {
    const [account] = await this.db.select().from(accounts).where(eq(accounts.id, accountId));
    if (!account || !(await verifyPassword(account.passwordHash ?? undefined, password)))
      throw new AppError('WRONG_PASSWORD');
  }

  /**
   * Changes the password after checking the current one; every other session ends, with the
   * temporary keys it minted (the caller's session and its keys stay).
   */
  async changePassword(accountId: number, keepSessionId: number | undefined, current: string, next: string) {
    await this.checkOwnPassword(accountId, current);
    checkPassword(next, await this.passwordContext(accountId));
    const passwordHash = await hashPassword(next);
    await this.db.transaction(async (tx) => {
      await tx.update(accounts).set({ passwordHash }).where(eq(accounts.id, accountId));
      await this.sessions.endAll(tx, accountId, keepSessionId);
      await this.retire(tx, accountId, 'reset');
      await this.retire(tx, accountId, 'invite');
    });
  }

  /** Mails a reset link when the address has an account; the same (silent) answer otherwise. */
  async requestReset(emailInput: string): Promise<void> {
    const email = emailInput.trim().toLowerCase().slice(0, 254);
    await this.db.transaction(async (tx) => {
      // Locked: two requests at once retire each other's links in turn (one link stays valid).
      const [account] = await tx
        .select({ id: accounts.id })
        .from(accounts)
        .where(eq(accounts.email, email))
        .for('update');
      if (account) await this.issue(tx, account.id, email, 'reset');
    });
  }

  /**
   * Sets a new password from a reset link: every session ends, with every temporary key (each dies
   * with its session), and the address counts as proven.
   */
  async resetPassword(token: string, password: string): Promise<void> {
    checkPassword(password, await this.tokenContext(token, 'reset'));
    const passwordHash = await hashPassword(password);
    await this.db.transaction(async (tx) => {
      const accountId = await this.consume(tx, token, 'reset');
      await tx
        .update(accounts)
        .set({ passwordHash, emailVerifiedAt: sql`coalesce(${accounts.emailVerifiedAt}, now())` })
        .where(eq(accounts.id, accountId));
      await this.sessions.endAll(tx, accountId);
      // A password is set: an invitation still outstanding must not set another one.
      await this.retire(tx, accountId, 'invite');
    });
  }

  /**
   * A new session for a signed-in account (the caller ends any session the client still held). The
   * password (and the code) were just proven: it starts in sudo mode.
   */
  newSession(accountId: number, kind: SessionKind, userAgent?: string) {
    return this.sessions.create(this.db, accountId, kind, { userAgent, confirmed: true });
  }

  /** What a new password must not be built on (src/passwords): the email and the slugs of the account's sites. */
  private async passwordContext(accountId: number): Promise<string[]> {
    const [account] = await this.db
      .select({ email: accounts.email })
      .from(accounts)
      .where(eq(accounts.id, accountId));
    const slugs = await this.db
      .select({ slug: sites.slug })
      .from(sites)
      .where(eq(sites.accountId, accountId));
    return [...(account ? [account.email] : []), ...slugs.map((site) => site.slug)];
  }

  /**
   * The password context of a mailed token's account. A token that is not valid is refused here,
   * before the new password is judged: the credential is checked first, as sign-in checks its own.
   */
  private async tokenContext(token: string, kind: AccountTokenKind): Promise<string[]> {
    if (token.length < 16 || token.length > 200) throw new AppError('INVALID_TOKEN');
    const [row] = await this.db
      .select({ accountId: accountTokens.accountId })
      .from(accountTokens)
      .where(
        and(
          eq(accountTokens.tokenHash, hashSecret(token)),
          eq(accountTokens.kind, kind),
          isNull(accountTokens.usedAt),
          gt(accountTokens.expiresAt, sql`now()`),
        ),
      );
    if (!row) throw new AppError('INVALID_TOKEN');
    return this.passwordContext(row.accountId);
  }

  private async byEmail(email: string) {
    const [account] = await this.db.select().from(accounts).where(eq(accounts.email, email));
    return account;
  }

  /** A new one-time token of `kind` (earlier unused ones of that kind stop working), mailed when a mailer is set. */
  private async issue(tx: Executor, accountId: number, email: string, kind: AccountTokenKind) {
    await this.retire(tx, accountId, kind);
    const token = newSecret(`hp_${kind}_`);
    const expiresAt = new Date(Date.now() + TOKEN_LIFETIME_MS[kind]);
    await tx.insert(accountTokens).values({ accountId, kind, tokenHash: hashSecret(token), expiresAt });
    const link = this.linkFor(kind, token);
    const mailer = this.options.mailer;
    if (mailer) await mailer(tx, { kind, to: email, link, expiresAt });
    return { link, expiresAt, mailed: mailer !== undefined };
  }

  private async retire(tx: Executor, accountId: number, kind: AccountTokenKind): Promise<void> {
    await tx
      .update(accountTokens)
      .set({ usedAt: sql`now()` })
      .where(
        and(
          eq(accountTokens.accountId, accountId),
          eq(accountTokens.kind, kind),
          isNull(accountTokens.usedAt),
        ),
      );
  }

  /** Uses a token once (one statement: two concurrent uses cannot both succeed); its account. */
  private async consume(tx: Executor, token: string, kind: AccountTokenKind): Promise<number> {
    if (token.length < 16 || token.length > 200) throw new AppError('INVALID_TOKEN');
    const [row] = await tx
      .update(accountTokens)
      .set({ usedAt: sql`now()` })
      .where(
        and(
          eq(accountTokens.tokenHash, hashSecret(token)),
          eq(accountTokens.kind, kind),
          isNull(accountTokens.usedAt),
          gt(accountTokens.expiresAt, sql`now()`),
        ),
      )
      .returning({ accountId: accountTokens.accountId });
    if (!row) throw new AppError('INVALID_TOKEN');
    return row.accountId;
  }

  /** Deletes expired sessions and tokens past their lifetime; returns how many rows went. */
  async sweepExpired(): Promise<number> {
    const tokens = await this.db
      .delete(accountTokens)
      .where(sql`${accountTokens.expiresAt} < now() - interval '1 day'`)
      .returning({ id: accountTokens.id });
    return (await this.sessions.sweepExpired()) + tokens.length;
  }
}
