import { createHash, randomBytes } from 'node:crypto';
import { and, asc, count, eq, gt, ne, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import { secretMatches } from '../platform/index.js';
import { CHANNELS, type Db, type Tx } from '../store/index.js';
import { checkPassword, hashPassword, normalizeEmail, verifyPassword } from '../passwords/index.js';
import { sqliteSessions, sqliteUsers, type SqliteDatabaseRow, type SqliteUserRow } from './tables.js';

export const SESSION_DAYS = 30;
/** A session used with less than this left is extended to SESSION_DAYS again. */
export const SESSION_REFRESH_DAYS = 7;
const DAY_MS = 86_400_000;
/** Serializes changes to one pool's admins and size (first-user bootstrap, last-admin rules). */
const POOL_LOCK_CLASS = 4203;

type Role = 'admin' | 'user';

/**
 * Who administers a pool: an admin of it (`userId`), or the site's owner by its master key
 * (`userId` null), who is no user of the pool — the rules about oneself do not apply to them; the
 * pool still never loses its last active admin.
 */
export interface PoolActor {
  databaseId: number;
  userId: number | null;
}

export interface SignedIn {
  user: SqliteUserRow;
  sessionId: number;
  expiresAt: Date;
}

export function userJson(user: SqliteUserRow, full = true) {
  const base = {
    id: user.id,
    email: user.email,
    displayName: user.displayName,
    role: user.role,
    disabled: user.disabled,
  };
  return full
    ? {
        ...base,
        createdAt: user.createdAt.toISOString(),
        lastLoginAt: user.lastLoginAt?.toISOString() ?? null,
      }
    : base;
}

const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/**
 * The end-user pool of each database, kept in PostgreSQL: every API replica can check a session
 * without reaching the shard, and no tenant SQL can ever read a password hash or a session,
 * because they are not in the database file at all.
 */
export class UserPools {
  constructor(
    private readonly db: Db,
    /** Told (in this process, after the commit) that a database's sessions or users changed. */
    private readonly onChanged: (databaseId: number) => void = () => undefined,
  ) {}

  /**
   * The first user of a pool becomes its admin; later ones are users (spec 3). `site`: the site's
   * host names, which a password must not be built on (as on the email; src/passwords).
   */
  async register(
    database: SqliteDatabaseRow,
    maxUsers: number | null,
    plan: string,
    input: { email: string; password: string; displayName?: string | null },
    site: readonly string[] = [],
  ): Promise<SqliteUserRow> {
    const email = normalizeEmail(input.email);
    checkPassword(input.password, [email, ...site]);
    const passwordHash = await hashPassword(input.password); // CPU work outside the transaction
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${POOL_LOCK_CLASS}, ${database.id})`);
      const [taken] = await tx
        .select({ id: sqliteUsers.id })
        .from(sqliteUsers)
        .where(and(eq(sqliteUsers.databaseId, database.id), eq(sqliteUsers.email, email)));
      if (taken) throw new AppError('EMAIL_ALREADY_REGISTERED');
      const [counted] = await tx
        .select({ n: count() })
        .from(sqliteUsers)
        .where(eq(sqliteUsers.databaseId, database.id));
      const users = counted?.n ?? 0;
      if (maxUsers !== null && users >= maxUsers)
        throw new AppError('USER_POOL_LIMIT_REACHED', { limit: maxUsers, plan });
      const role: Role = users === 0 ? 'admin' : 'user';
      const [user] = await tx
        .insert(sqliteUsers)
        .values({
          databaseId: database.id,
          email,
          displayName: input.displayName ?? null,
          passwordHash,
          role,
        })
        .returning();
      return user!;
    });
  }

  /** Whether the pool has no user yet (registration then bootstraps an admin). */
  async isEmpty(databaseId: number): Promise<boolean> {
    const [row] = await this.db
      .select({ id: sqliteUsers.id })
      .from(sqliteUsers)
      .where(eq(sqliteUsers.databaseId, databaseId))
      .limit(1);
    return !row;
  }

  /**
   * Signs a user in. An unknown email and a wrong password get the same error after the same
   * work (a dummy hash is verified); a disabled account is told so only with the right password.
   */
  async login(
    database: SqliteDatabaseRow,
    emailInput: string,
    password: string,
  ): Promise<{ token: string } & SignedIn> {
    const email = emailInput.trim().toLowerCase();
    // No registered email holds a NUL (and PostgreSQL text cannot): such an email is unknown.
    const [user] = email.includes('\u0000')
      ? []
      : await dbOp('sqlite_login_lookup', () =>
          this.db
            .select()
            .from(sqliteUsers)
            .where(and(eq(sqliteUsers.databaseId, database.id), eq(sqliteUsers.email, email))),
        );
    const ok = await verifyPassword(user?.passwordHash, password);
    if (!user || !ok) throw new AppError('INVALID_CREDENTIALS');
    if (user.disabled) throw new AppError('ACCOUNT_DISABLED');
    const token = randomBytes(32).toString('hex');
    const expiresAt = new Date(Date.now() + SESSION_DAYS * DAY_MS);
    const [session] = await this.db
      .insert(sqliteSessions)
      .values({ userId: user.id, databaseId: database.id, tokenHash: hashToken(token), expiresAt })
      .returning({ id: sqliteSessions.id });
    const [signedIn] = await this.db
      .update(sqliteUsers)
      .set({ lastLoginAt: new Date() })
      .where(eq(sqliteUsers.id, user.id))
      .returning();
    return { token, user: signedIn!, sessionId: session!.id, expiresAt };
  }

  /**
   * The signed-in user behind an `X-Sqlite-User-Token` of this database; SQLITE_SESSION_INVALID
   * when unknown, expired, of another database, or its user is disabled. A session with less
   * than SESSION_REFRESH_DAYS left is extended to SESSION_DAYS.
   */
  async authenticate(
    database: SqliteDatabaseRow,
    token: string | undefined,
    refresh = true,
  ): Promise<SignedIn> {
    if (!token || !/^[0-9a-f]{64}$/i.test(token)) throw new AppError('SQLITE_SESSION_INVALID');
    const [row] = await dbOp('sqlite_authenticate_session', () =>
      this.db
        .select({ session: sqliteSessions, user: sqliteUsers })
        .from(sqliteSessions)
        .innerJoin(sqliteUsers, eq(sqliteUsers.id, sqliteSessions.userId))
        .where(
          and(
            eq(sqliteSessions.tokenHash, hashToken(token.toLowerCase())),
            eq(sqliteSessions.databaseId, database.id),
            gt(sqliteSessions.expiresAt, sql`now()`),
          ),
        ),
    );
    if (!row || row.user.disabled || !secretMatches(token.toLowerCase(), row.session.tokenHash))
      throw new AppError('SQLITE_SESSION_INVALID');
    let expiresAt = row.session.expiresAt;
    if (refresh && expiresAt.getTime() - Date.now() < SESSION_REFRESH_DAYS * DAY_MS) {
      expiresAt = new Date(Date.now() + SESSION_DAYS * DAY_MS);
      await this.db.update(sqliteSessions).set({ expiresAt }).where(eq(sqliteSessions.id, row.session.id));
    }
    return { user: row.user, sessionId: row.session.id, expiresAt };
  }

  /** Ends a session; nothing happens for an unknown token (logout is idempotent). */
  async logout(database: SqliteDatabaseRow, token: string | undefined): Promise<void> {
    if (!token || !/^[0-9a-f]{64}$/i.test(token)) return;
    const ended = await this.db.transaction(async (tx) => {
      const rows = await tx
        .delete(sqliteSessions)
        .where(
          and(
            eq(sqliteSessions.tokenHash, hashToken(token.toLowerCase())),
            eq(sqliteSessions.databaseId, database.id),
          ),
        )
        .returning({ id: sqliteSessions.id });
      if (rows.length > 0) await announce(tx, database.id);
      return rows.length > 0;
    });
    if (ended) this.onChanged(database.id);
  }

  /** Changes the signed-in user's password; their other sessions end, this one stays. */
  async changePassword(
    me: SignedIn,
    currentPassword: string,
    newPassword: string,
    site: readonly string[] = [],
  ): Promise<void> {
    if (!(await verifyPassword(me.user.passwordHash, currentPassword)))
      throw new AppError('INVALID_CREDENTIALS');
    checkPassword(newPassword, [me.user.email, ...site]);
    const passwordHash = await hashPassword(newPassword);
    await this.db.transaction(async (tx) => {
      await tx.update(sqliteUsers).set({ passwordHash }).where(eq(sqliteUsers.id, me.user.id));
      await tx
        .delete(sqliteSessions)
        .where(and(eq(sqliteSessions.userId, me.user.id), ne(sqliteSessions.id, me.sessionId)));
      await announce(tx, me.user.databaseId);
    });
    this.onChanged(me.user.databaseId);
  }

  async list(databaseId: number): Promise<SqliteUserRow[]> {
    return this.db
      .select()
      .from(sqliteUsers)
      .where(eq(sqliteUsers.databaseId, databaseId))
      .orderBy(asc(sqliteUsers.createdAt), asc(sqliteUsers.id));
  }

  /**
   * An admin changes a user's role, disabled flag or display name, within the guard rails: not
   * their own role, not disabling themselves, never leaving the pool without an active admin.
   * Disabling ends all the user's sessions at once.
   */
  async update(
    actor: PoolActor,
    targetId: number,
    changes: { role?: Role; disabled?: boolean; displayName?: string | null },
  ): Promise<SqliteUserRow> {
    const self = targetId === actor.userId;
    const updated = await this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${POOL_LOCK_CLASS}, ${actor.databaseId})`);
      await this.stillAdmin(tx, actor);
      const target = await this.target(tx, actor.databaseId, targetId);
      if (self && changes.role !== undefined && changes.role !== target.role)
        guard('CANNOT_CHANGE_OWN_ROLE', 'You cannot change your own role.');
      if (self && changes.disabled === true)
        guard('CANNOT_DISABLE_SELF', 'You cannot disable your own account.');
      const losesAdmin =
        target.role === 'admin' &&
        !target.disabled &&
        ((changes.role ?? 'admin') !== 'admin' || changes.disabled === true);
      if (losesAdmin && (await this.activeAdmins(tx, actor.databaseId)) <= 1)
        guard('LAST_ADMIN', 'The last active admin cannot be demoted or disabled.');
      const [updated] = await tx
        .update(sqliteUsers)
        .set({
          ...(changes.role !== undefined ? { role: changes.role } : {}),
          ...(changes.disabled !== undefined ? { disabled: changes.disabled } : {}),
          ...(changes.displayName !== undefined ? { displayName: changes.displayName } : {}),
        })
        .where(eq(sqliteUsers.id, target.id))
        .returning();
      if (changes.disabled === true)
        await tx.delete(sqliteSessions).where(eq(sqliteSessions.userId, target.id));
      await announce(tx, actor.databaseId);
      return updated!;
    });
    this.onChanged(actor.databaseId);
    return updated;
  }

  /** An admin sets a new password for a user; all the user's sessions end. */
  async resetPassword(
    actor: PoolActor,
    targetId: number,
    newPassword: string,
    site: readonly string[] = [],
  ): Promise<void> {
    const [target] = await this.db
      .select({ email: sqliteUsers.email })
      .from(sqliteUsers)
      .where(and(eq(sqliteUsers.databaseId, actor.databaseId), eq(sqliteUsers.id, targetId)));
    checkPassword(newPassword, [...(target ? [target.email] : []), ...site]);
    const passwordHash = await hashPassword(newPassword);
    await this.db.transaction(async (tx) => {
      // Under the pool lock, as update and delete: an admin demoted a moment ago resets nothing.
      await tx.execute(sql`select pg_advisory_xact_lock(${POOL_LOCK_CLASS}, ${actor.databaseId})`);
      await this.stillAdmin(tx, actor);
      const target = await this.target(tx, actor.databaseId, targetId);
      await tx.update(sqliteUsers).set({ passwordHash }).where(eq(sqliteUsers.id, target.id));
      await tx.delete(sqliteSessions).where(eq(sqliteSessions.userId, target.id));
      await announce(tx, actor.databaseId);
    });
    this.onChanged(actor.databaseId);
  }

  /** An admin deletes a user (never themselves, never the last active admin); sessions go with it. */
  async delete(actor: PoolActor, targetId: number): Promise<void> {
    if (targetId === actor.userId) guard('CANNOT_DELETE_SELF', 'You cannot delete your own account.');
    await this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${POOL_LOCK_CLASS}, ${actor.databaseId})`);
      await this.stillAdmin(tx, actor);
      const target = await this.target(tx, actor.databaseId, targetId);
      if (target.role === 'admin' && !target.disabled && (await this.activeAdmins(tx, actor.databaseId)) <= 1)
        guard('LAST_ADMIN', 'The last active admin cannot be deleted.');
      await tx.delete(sqliteUsers).where(eq(sqliteUsers.id, target.id));
      await announce(tx, actor.databaseId);
    });
    this.onChanged(actor.databaseId);
  }

  /** Deletes expired sessions; returns how many went. */
  async sweepExpired(): Promise<number> {
    const rows = await this.db
      .delete(sqliteSessions)
      .where(sql`${sqliteSessions.expiresAt} < now()`)
      .returning({ id: sqliteSessions.id });
    return rows.length;
  }

  private async target(tx: Tx, databaseId: number, id: number): Promise<SqliteUserRow> {
    const [user] = await tx
      .select()
      .from(sqliteUsers)
      .where(and(eq(sqliteUsers.id, id), eq(sqliteUsers.databaseId, databaseId)));
    if (!user) throw new AppError('NOT_FOUND', { message: `User ${id} not found in this database.` });
    return user;
  }

  /**
   * The actor's role as of now, under the pool lock (an admin demoted a moment ago is not one);
   * the owner (master key) always may.
   */
  private async stillAdmin(tx: Tx, actor: PoolActor): Promise<void> {
    if (actor.userId === null) return;
    const [row] = await tx.select().from(sqliteUsers).where(eq(sqliteUsers.id, actor.userId));
    if (!row || row.role !== 'admin' || row.disabled)
      throw new AppError('SQLITE_FORBIDDEN', { message: 'Admin role required' });
  }

  private async activeAdmins(tx: Tx, databaseId: number): Promise<number> {
    const [row] = await tx
      .select({ n: count() })
      .from(sqliteUsers)
      .where(
        and(
          eq(sqliteUsers.databaseId, databaseId),
          eq(sqliteUsers.role, 'admin'),
          eq(sqliteUsers.disabled, false),
        ),
      );
    return row?.n ?? 0;
  }
}

/** Tells every replica's session cache, when `tx` commits, that a database's pool changed. */
async function announce(tx: Tx, databaseId: number): Promise<void> {
  await tx.execute(sql`select pg_notify(${CHANNELS.sqliteSessions}, ${String(databaseId)})`);
}

function guard(
  code: 'CANNOT_CHANGE_OWN_ROLE' | 'CANNOT_DISABLE_SELF' | 'CANNOT_DELETE_SELF' | 'LAST_ADMIN',
  message: string,
): never {
  throw new AppError('SQLITE_FORBIDDEN', { message, code });
}
