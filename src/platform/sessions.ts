import { and, desc, eq, gt, lt, ne, sql } from 'drizzle-orm';
import { dbOp } from '../observability/index.js';
import type { Db, Executor } from '../store/index.js';
import { hashSecret, newSecret, secretMatches } from './secrets.js';
import { accountSessions } from './tables.js';
import type { Principal } from './types.js';

export const ACCOUNT_SESSION_SECONDS = 24 * 3600;
/** A browser session lives longer than a bearer one: the console is signed into, a CLI token is minted. */
export const BROWSER_SESSION_SECONDS = 7 * 24 * 3600;
const USER_AGENT_CHARS = 200;

export type SessionKind = 'bearer' | 'browser';
/** Sudo mode: how long a password (or TOTP) confirmation lets a session delete sites and make keys. */
export const SUDO_SECONDS = 15 * 60;

export interface NewSessionOptions {
  userAgent?: string | undefined;
  /** A sign-in (the password was just proven): the session starts in sudo mode. */
  confirmed?: boolean;
  /** `hostplane admin session`: the operator's, marked as such and never asked for sudo. */
  operator?: boolean;
}

export interface SessionInfo {
  id: number;
  kind: SessionKind;
  userAgent: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date;
}

/** Until when a session confirmed at `confirmedAt` is in sudo mode (undefined: never confirmed). */
export const sudoUntil = (confirmedAt: Date | null): Date | undefined =>
  confirmedAt ? new Date(confirmedAt.getTime() + SUDO_SECONDS * 1000) : undefined;

/** The owners' sessions: random tokens stored as sha256 hashes, so any replica can check one. */
export class Sessions {
  constructor(private readonly db: Db) {}

  async create(
    db: Executor,
    accountId: number,
    kind: SessionKind,
    options: NewSessionOptions = {},
  ): Promise<{ id: number; token: string; expiresAt: Date }> {
    const { userAgent } = options;
    const token = newSecret('hp_sess_');
    const seconds = kind === 'browser' ? BROWSER_SESSION_SECONDS : ACCOUNT_SESSION_SECONDS;
    const expiresAt = new Date(Date.now() + seconds * 1000);
    const [row] = await dbOp('create_session', () =>
      db
        .insert(accountSessions)
        .values({
          accountId,
          tokenHash: hashSecret(token),
          kind,
          userAgent: userAgent ? userAgent.slice(0, USER_AGENT_CHARS) : null,
          operator: options.operator ?? false,
          confirmedAt: options.confirmed ? sql`now()` : null,
          expiresAt,
        })
        .returning({ id: accountSessions.id }),
    );
    return { id: row!.id, token, expiresAt };
  }

  /** Resolves a session token to its account; `kind` says which transport it must have come by. */
  async authenticate(token: string, kind: SessionKind): Promise<Principal | undefined> {
    if (token.length < 16 || token.length > 200) return undefined;
    const [row] = await dbOp('authenticate_session', () =>
      this.db
        .select()
        .from(accountSessions)
        .where(
          and(eq(accountSessions.tokenHash, hashSecret(token)), gt(accountSessions.expiresAt, sql`now()`)),
        ),
    );
    if (!row || !secretMatches(token, row.tokenHash) || row.kind !== kind) return undefined;
    // As for keys: recording use at most once a minute keeps authentication a read.
    if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > 60_000) {
      await this.db
        .update(accountSessions)
        .set({ lastUsedAt: new Date() })
        .where(eq(accountSessions.id, row.id));
    }
    return {
      accountId: row.accountId,
      siteId: undefined,
      via: 'session',
      sessionId: row.id,
      sessionKind: kind,
      sudoUntil: row.operator ? 'always' : sudoUntil(row.confirmedAt),
    };
  }

  /** Sudo mode: marks the session confirmed now (the caller checked the password or a code). */
  async confirm(sessionId: number): Promise<Date | undefined> {
    const [row] = await this.db
      .update(accountSessions)
      .set({ confirmedAt: sql`now()` })
      .where(eq(accountSessions.id, sessionId))
      .returning({ confirmedAt: accountSessions.confirmedAt });
    return sudoUntil(row?.confirmedAt ?? null);
  }

  async list(accountId: number): Promise<SessionInfo[]> {
    return this.db
      .select({
        id: accountSessions.id,
        kind: accountSessions.kind,
        userAgent: accountSessions.userAgent,
        createdAt: accountSessions.createdAt,
        lastUsedAt: accountSessions.lastUsedAt,
        expiresAt: accountSessions.expiresAt,
      })
      .from(accountSessions)
      .where(and(eq(accountSessions.accountId, accountId), gt(accountSessions.expiresAt, sql`now()`)))
      .orderBy(desc(accountSessions.id))
      .limit(500);
  }

  /** Ends one session of the account; false when it has none with that id. */
  async end(accountId: number, sessionId: number): Promise<boolean> {
    const rows = await this.db
      .delete(accountSessions)
      .where(and(eq(accountSessions.accountId, accountId), eq(accountSessions.id, sessionId)))
      .returning({ id: accountSessions.id });
    return rows.length > 0;
  }

  /** Ends every session of the account but `keepId` (a password change keeps the one that made it). */
  async endAll(db: Executor, accountId: number, keepId?: number): Promise<void> {
    await db
      .delete(accountSessions)
      .where(
        keepId === undefined
          ? eq(accountSessions.accountId, accountId)
          : and(eq(accountSessions.accountId, accountId), ne(accountSessions.id, keepId)),
      );
  }

  /** Ends the session of `token` (sign-out, or the old cookie at a new sign-in). */
  async endByToken(token: string): Promise<void> {
    if (token.length < 16 || token.length > 200) return;
    await this.db.delete(accountSessions).where(eq(accountSessions.tokenHash, hashSecret(token)));
  }

  /** Deletes expired sessions; returns how many went. */
  async sweepExpired(): Promise<number> {
    const sessions = await this.db
      .delete(accountSessions)
      .where(lt(accountSessions.expiresAt, sql`now()`))
      .returning({ id: accountSessions.id });
    return sessions.length;
  }
}
