import { and, asc, desc, eq, gt, isNull, lt, or, sql } from 'drizzle-orm';
import { AppError } from '../errors/index.js';
import { dbOp } from '../observability/index.js';
import type { Db } from '../store/index.js';
import { hashSecret, newSecret, secretMatches } from './secrets.js';
import { sudoUntil } from './sessions.js';
import { accountSessions, apiKeys, sites } from './tables.js';
import type { Principal } from './types.js';

export const TEMP_KEY_DEFAULT_SECONDS = 3600;
export const TEMP_KEY_MIN_SECONDS = 60;
export const TEMP_KEY_MAX_SECONDS = 86_400;
/**
 * Live temporary keys a site may hold (the console mints one an hour per signed-in tab): a bound on
 * what a session can mint, and on the owner's list. Checked before the insert, so requests at once
 * can pass it together: a bound on abuse, like the other caps.
 */
export const MAX_TEMP_KEYS_PER_SITE = 100;

/** A new permanent API key. */
export const newApiKey = (): string => newSecret('hp_live_');

export interface PermanentKeyInfo {
  id: number;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

export interface TemporaryKeyInfo {
  id: number;
  prefix: string;
  createdAt: Date;
  expiresAt: Date;
  lastUsedAt: Date | null;
  /** The session that minted it (the key dies with it). */
  session: { id: number; kind: 'bearer' | 'browser'; operator: boolean; userAgent: string | null };
}

/** API keys: permanent (one per site, minted with the site) and temporary; stored as hashes. */
export class Keys {
  constructor(private readonly db: Db) {}

  /** Resolves an `X-API-Key` to its site and account; undefined when unknown, expired or revoked. */
  async authenticate(key: string): Promise<Principal | undefined> {
    if (key.length < 16 || key.length > 200) return undefined;
    const hash = hashSecret(key);
    const [row] = await dbOp('authenticate_key', () =>
      this.db
        .select({
          id: apiKeys.id,
          keyHash: apiKeys.keyHash,
          keyPrefix: apiKeys.keyPrefix,
          kind: apiKeys.kind,
          siteId: apiKeys.siteId,
          accountId: sites.accountId,
          lastUsedAt: apiKeys.lastUsedAt,
          // A temporary key carries its session's sudo mode, read live (every replica at once).
          sessionOperator: accountSessions.operator,
          sessionConfirmedAt: accountSessions.confirmedAt,
        })
        .from(apiKeys)
        .innerJoin(sites, eq(sites.id, apiKeys.siteId))
        // A temporary key's session: ended, it took the key with it (cascade); expired but not
        // swept yet, the key is refused here.
        .leftJoin(accountSessions, eq(accountSessions.id, apiKeys.sessionId))
        .where(
          and(
            eq(apiKeys.keyHash, hash),
            isNull(apiKeys.revokedAt),
            or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, sql`now()`)),
            or(isNull(apiKeys.sessionId), gt(accountSessions.expiresAt, sql`now()`)),
          ),
        ),
    );
    if (!row || !secretMatches(key, row.keyHash)) return undefined;
    // Recording use at most once a minute keeps authentication a read on the hot path.
    if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > 60_000) {
      await this.db.update(apiKeys).set({ lastUsedAt: new Date() }).where(eq(apiKeys.id, row.id));
    }
    const principal: Principal = {
      accountId: row.accountId,
      siteId: row.siteId,
      via: row.kind === 'temporary' ? 'temporary_key' : 'permanent_key',
      key: { id: row.id, prefix: row.keyPrefix },
    };
    if (row.kind === 'temporary')
      principal.sudoUntil = row.sessionOperator ? 'always' : sudoUntil(row.sessionConfirmedAt);
    return principal;
  }

  /** A temporary key of the site, bound to the session that mints it: it dies with that session. */
  async createTemporary(
    siteId: number,
    expiresInSeconds: number,
    sessionId: number,
  ): Promise<{ key: string; expiresAt: Date }> {
    const [live] = await this.db
      .select({ n: sql<number>`count(*)::int` })
      .from(apiKeys)
      .where(
        and(
          eq(apiKeys.siteId, siteId),
          eq(apiKeys.kind, 'temporary'),
          isNull(apiKeys.revokedAt),
          gt(apiKeys.expiresAt, sql`now()`),
        ),
      );
    if ((live?.n ?? 0) >= MAX_TEMP_KEYS_PER_SITE)
      throw new AppError('LIMIT_REACHED', {
        message: `This site has ${MAX_TEMP_KEYS_PER_SITE} live temporary keys, the most it can have: revoke one (GET /api/v1/account/sites/{siteId}/temporary-keys) or wait for one to expire.`,
        limit: MAX_TEMP_KEYS_PER_SITE,
      });
    const key = newSecret('hp_temp_');
    const expiresAt = new Date(Date.now() + expiresInSeconds * 1000);
    try {
      await dbOp('create_temp_key', () =>
        this.db.insert(apiKeys).values({
          siteId,
          kind: 'temporary',
          keyHash: hashSecret(key),
          keyPrefix: key.slice(0, 12),
          expiresAt,
          sessionId,
        }),
      );
    } catch (err) {
      // The session ended between its check and this insert (its foreign key refused the row).
      const [live] = await this.db
        .select({ id: accountSessions.id })
        .from(accountSessions)
        .where(eq(accountSessions.id, sessionId));
      if (!live)
        throw new AppError('UNAUTHORIZED', { message: 'The session ended.', hint: 'Sign in again.' });
      throw err;
    }
    return { key, expiresAt };
  }

  /** The site's temporary keys that still work, newest first, with the session that minted each. */
  async listTemporary(siteId: number): Promise<TemporaryKeyInfo[]> {
    const rows = await this.db
      .select({
        id: apiKeys.id,
        prefix: apiKeys.keyPrefix,
        createdAt: apiKeys.createdAt,
        expiresAt: apiKeys.expiresAt,
        lastUsedAt: apiKeys.lastUsedAt,
        sessionId: accountSessions.id,
        kind: accountSessions.kind,
        operator: accountSessions.operator,
        userAgent: accountSessions.userAgent,
      })
      .from(apiKeys)
      .innerJoin(accountSessions, eq(accountSessions.id, apiKeys.sessionId))
      .where(
        and(
          eq(apiKeys.siteId, siteId),
          eq(apiKeys.kind, 'temporary'),
          isNull(apiKeys.revokedAt),
          gt(apiKeys.expiresAt, sql`now()`),
          gt(accountSessions.expiresAt, sql`now()`),
        ),
      )
      .orderBy(desc(apiKeys.id))
      .limit(1000);
    return rows.map((r) => ({
      id: r.id,
      prefix: r.prefix,
      createdAt: r.createdAt,
      expiresAt: r.expiresAt!,
      lastUsedAt: r.lastUsedAt,
      session: { id: r.sessionId, kind: r.kind, operator: r.operator, userAgent: r.userAgent },
    }));
  }

  /** A new permanent key of the site (shown once; stored as its hash). */
  async createPermanent(
    siteId: number,
  ): Promise<{ id: number; key: string; prefix: string; createdAt: Date }> {
    const key = newApiKey();
    const [row] = await dbOp('create_key', () =>
      this.db
        .insert(apiKeys)
        .values({ siteId, kind: 'permanent', keyHash: hashSecret(key), keyPrefix: key.slice(0, 12) })
        .returning({ id: apiKeys.id, createdAt: apiKeys.createdAt }),
    );
    return { id: row!.id, key, prefix: key.slice(0, 12), createdAt: row!.createdAt };
  }

  /** The site's permanent keys that still work, oldest first: never the key, only its prefix. */
  listPermanent(siteId: number): Promise<PermanentKeyInfo[]> {
    return this.db
      .select({
        id: apiKeys.id,
        prefix: apiKeys.keyPrefix,
        createdAt: apiKeys.createdAt,
        lastUsedAt: apiKeys.lastUsedAt,
      })
      .from(apiKeys)
      .where(and(eq(apiKeys.siteId, siteId), eq(apiKeys.kind, 'permanent'), isNull(apiKeys.revokedAt)))
      .orderBy(asc(apiKeys.id))
      .limit(1000);
  }

  /** Revokes a key of the site at once (every replica reads the row); false when it has none of that kind. */
  async revoke(
    siteId: number,
    keyId: number,
    kind: 'permanent' | 'temporary' = 'permanent',
  ): Promise<boolean> {
    const rows = await this.db
      .update(apiKeys)
      .set({ revokedAt: sql`now()` })
      .where(
        and(
          eq(apiKeys.id, keyId),
          eq(apiKeys.siteId, siteId),
          eq(apiKeys.kind, kind),
          isNull(apiKeys.revokedAt),
          or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, sql`now()`)),
        ),
      )
      .returning({ id: apiKeys.id });
    return rows.length > 0;
  }

  /** Deletes expired temporary keys; returns how many went. */
  async sweepExpired(): Promise<number> {
    const keys = await this.db
      .delete(apiKeys)
      .where(and(eq(apiKeys.kind, 'temporary'), lt(apiKeys.expiresAt, sql`now()`)))
      .returning({ id: apiKeys.id });
    return keys.length;
  }
}
