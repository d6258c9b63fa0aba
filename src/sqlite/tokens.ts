import { and, asc, count, eq, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import { hashSecret, newSecret, secretMatches, type Platform, type Site } from '../platform/index.js';
import { CHANNELS, type Db } from '../store/index.js';
import { normalizeDatabasePath } from './db-path.js';
import { sqliteDatabases, sqliteTokens, type SqliteDatabaseRow, type SqliteTokenRow } from './tables.js';

export interface InstallInput {
  path: string;
  name: string;
  permissions: 'read' | 'readwrite';
  requireUserAuth: boolean;
  expiresInDays?: number;
  /** A token minted beforehand (the controller stores it in a Secret first); default: a new one. */
  token?: string;
  /** Settings of the database when this install creates it (a SqliteDatabase resource's spec). */
  newDatabase?: { shard?: string; replicationEnabled?: boolean };
}

/** A scoped token resolved: its record and the database it opens. */
export interface TokenGrant {
  token: SqliteTokenRow;
  database: SqliteDatabaseRow;
}

/** Serializes database creation per account, so concurrent installs cannot overshoot the plan. */
const DATABASES_LOCK_CLASS = 4202;
const DAY_MS = 86_400_000;

/** Databases and the scoped tokens that reach them (spec 4.8, 2.10). */
export class SqliteTokens {
  constructor(
    private readonly db: Db,
    private readonly platform: Platform,
  ) {}

  /**
   * Mints a token for (site, path), creating the database record when it is the first install of
   * that path (counted against the account's plan). Creating the file is the shard's business.
   */
  async install(
    site: Site,
    input: InstallInput,
  ): Promise<{ token: string; record: SqliteTokenRow; database: SqliteDatabaseRow; created: boolean }> {
    const path = normalizeDatabasePath(input.path);
    const usage = await this.platform.getUsage(site.id);
    if (!usage) throw new AppError('UNKNOWN_SITE', { siteId: site.id });
    const { plan } = usage;
    const token = input.token ?? newSecret('hp_sqlite_');
    return dbOp('sqlite_install', () =>
      this.db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${DATABASES_LOCK_CLASS}, ${site.accountId})`);
        let [database] = await tx
          .select()
          .from(sqliteDatabases)
          .where(and(eq(sqliteDatabases.siteId, site.id), eq(sqliteDatabases.path, path)));
        const created = !database;
        if (!database) {
          const [counted] = await tx
            .select({ n: count() })
            .from(sqliteDatabases)
            .where(eq(sqliteDatabases.accountId, site.accountId));
          const current = counted?.n ?? 0;
          if (plan.maxSqliteDatabases !== null && current >= plan.maxSqliteDatabases)
            throw new AppError('SQLITE_COUNT_LIMIT', {
              current,
              limit: plan.maxSqliteDatabases,
              plan: plan.type,
            });
          [database] = await tx
            .insert(sqliteDatabases)
            .values({
              siteId: site.id,
              accountId: site.accountId,
              path,
              shard: input.newDatabase?.shard ?? null,
              replicationEnabled: input.newDatabase?.replicationEnabled ?? true,
            })
            .returning();
        }
        const [record] = await tx
          .insert(sqliteTokens)
          .values({
            databaseId: database!.id,
            tokenHash: hashSecret(token),
            name: input.name,
            permissions: input.permissions,
            requiresUserAuth: input.requireUserAuth,
            expiresAt:
              input.expiresInDays === undefined ? null : new Date(Date.now() + input.expiresInDays * DAY_MS),
          })
          .returning();
        return { token, record: record!, database: database!, created };
      }),
    );
  }

  /** Every token of the site's databases: active, revoked and expired, oldest first. */
  async list(siteId: number): Promise<Array<{ token: SqliteTokenRow; path: string }>> {
    const rows = await this.db
      .select({ token: sqliteTokens, path: sqliteDatabases.path })
      .from(sqliteTokens)
      .innerJoin(sqliteDatabases, eq(sqliteDatabases.id, sqliteTokens.databaseId))
      .where(eq(sqliteDatabases.siteId, siteId))
      .orderBy(asc(sqliteTokens.id));
    return rows;
  }

  /**
   * The site's databases, oldest first, with their user count and how many of their tokens are
   * active (not revoked, not expired), counted in the same query.
   */
  async databasesOf(
    siteId: number,
  ): Promise<Array<{ database: SqliteDatabaseRow; users: number; activeTokens: number }>> {
    return this.db
      .select({
        database: sqliteDatabases,
        users:
          sql<number>`(select count(*) from sqlite_users u where u.database_id = ${sqliteDatabases.id})`.mapWith(
            Number,
          ),
        activeTokens:
          sql<number>`(select count(*) from sqlite_tokens t where t.database_id = ${sqliteDatabases.id} and t.revoked_at is null and (t.expires_at is null or t.expires_at > now()))`.mapWith(
            Number,
          ),
      })
      .from(sqliteDatabases)
      .where(eq(sqliteDatabases.siteId, siteId))
      .orderBy(asc(sqliteDatabases.id));
  }

  /**
   * Revokes a token of the site (idempotent: a revoked token keeps its first revocation time) and
   * announces it, in the same transaction, to every replica's grant cache.
   */
  async revoke(siteId: number, tokenId: number): Promise<SqliteTokenRow> {
    const row = await dbOp('sqlite_revoke_token', () =>
      this.db.transaction(async (tx) => {
        const [revoked] = await tx
          .update(sqliteTokens)
          .set({ revokedAt: sql`coalesce(${sqliteTokens.revokedAt}, now())` })
          .where(
            and(
              eq(sqliteTokens.id, tokenId),
              sql`${sqliteTokens.databaseId} in (select ${sqliteDatabases.id} from ${sqliteDatabases} where ${sqliteDatabases.siteId} = ${siteId})`,
            ),
          )
          .returning();
        if (revoked) await tx.execute(sql`select pg_notify(${CHANNELS.sqliteGrants}, ${String(siteId)})`);
        return revoked;
      }),
    );
    if (!row)
      throw new AppError('NOT_FOUND', { message: `SQLite token ${tokenId} not found for this site.` });
    return row;
  }

  /**
   * Resolves an `X-Sqlite-Token` from PostgreSQL; SQLITE_TOKEN_INVALID when unknown, revoked or
   * expired. The CRUD path goes through TokenGrants, which keeps the result in memory.
   */
  async authenticate(token: string | undefined): Promise<TokenGrant> {
    if (!token || token.length < 16 || token.length > 200) throw new AppError('SQLITE_TOKEN_INVALID');
    const [row] = await dbOp('sqlite_authenticate_token', () =>
      this.db
        .select({ token: sqliteTokens, database: sqliteDatabases })
        .from(sqliteTokens)
        .innerJoin(sqliteDatabases, eq(sqliteDatabases.id, sqliteTokens.databaseId))
        .where(eq(sqliteTokens.tokenHash, hashSecret(token))),
    );
    if (!row || !secretMatches(token, row.token.tokenHash)) throw new AppError('SQLITE_TOKEN_INVALID');
    const now = Date.now();
    if (row.token.revokedAt || (row.token.expiresAt && row.token.expiresAt.getTime() <= now))
      throw new AppError('SQLITE_TOKEN_INVALID');
    // Recording use at most once a minute keeps authentication a read on the hot path.
    if (!row.token.lastUsedAt || now - row.token.lastUsedAt.getTime() > 60_000)
      await this.touch(row.token.id);
    return row;
  }

  /** Records that a token was used now (`lastUsedAt` of the token list). */
  async touch(tokenId: number): Promise<void> {
    await this.db.update(sqliteTokens).set({ lastUsedAt: new Date() }).where(eq(sqliteTokens.id, tokenId));
  }
}
