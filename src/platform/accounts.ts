import { and, eq, gt, lt, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { planFor, type PlanType } from './plans.js';
import { hashSecret, newSecret, secretMatches } from './secrets.js';
import { accountSessions, accounts } from './tables.js';
import type { Principal } from './types.js';

export const ACCOUNT_SESSION_SECONDS = 24 * 3600;

/** Accounts and their owners' sessions (bearer tokens, stored as hashes). */
export class Accounts {
  constructor(private readonly db: Db) {}

  async createSession(email: string): Promise<{ token: string; expiresAt: Date }> {
    const [account] = await this.db
      .select()
      .from(accounts)
      .where(eq(accounts.email, email.trim().toLowerCase()));
    if (!account) throw new AppError('UNKNOWN_ACCOUNT', { email });
    const token = newSecret('hp_sess_');
    const expiresAt = new Date(Date.now() + ACCOUNT_SESSION_SECONDS * 1000);
    await dbOp('create_session', () =>
      this.db
        .insert(accountSessions)
        .values({ accountId: account.id, tokenHash: hashSecret(token), expiresAt }),
    );
    return { token, expiresAt };
  }

  /** Resolves a bearer session token to its account. */
  async authenticateSession(token: string): Promise<Principal | undefined> {
    if (token.length < 16 || token.length > 200) return undefined;
    const [row] = await dbOp('authenticate_session', () =>
      this.db
        .select()
        .from(accountSessions)
        .where(
          and(eq(accountSessions.tokenHash, hashSecret(token)), gt(accountSessions.expiresAt, sql`now()`)),
        ),
    );
    if (!row || !secretMatches(token, row.tokenHash)) return undefined;
    return { accountId: row.accountId, siteId: undefined, via: 'session' };
  }

  /** The account's owner address and plan (forms mail their notifications there by default). */
  async contact(accountId: number): Promise<{ email: string; plan: PlanType } | undefined> {
    const [row] = await this.db
      .select({ email: accounts.email, plan: accounts.plan })
      .from(accounts)
      .where(eq(accounts.id, accountId));
    return row ? { email: row.email, plan: planFor(row.plan).type } : undefined;
  }

  /** Deletes expired account sessions; returns how many went. */
  async sweepExpired(): Promise<number> {
    const sessions = await this.db
      .delete(accountSessions)
      .where(lt(accountSessions.expiresAt, sql`now()`))
      .returning({ id: accountSessions.id });
    return sessions.length;
  }
}
