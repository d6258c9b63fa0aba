import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { tallyCounter, type Logger } from '../observability/index.js';
import { hashSecret, planFor, type Plan, type Platform, type SiteEvents } from '../platform/index.js';
import { CHANNELS, type Store } from '../store/index.js';
import { GroupedCache } from './grouped-cache.js';
import { siteOrigins } from './origins.js';
import type { SqliteDatabaseRow, SqliteTokenRow } from './tables.js';
import type { SqliteTokens } from './tokens.js';
import { grantLookups } from './metrics.js';

/**
 * A scoped token resolved with everything a call needs: its database, origins and plan caps (the
 * database's own caps where they are lower).
 */
export interface Grant {
  token: SqliteTokenRow;
  database: SqliteDatabaseRow;
  /** The origins the site's pages are served from (spec 2.10's allowedOrigins). */
  origins: string[];
  plan: Plan;
}

/** A safety net: a grant is re-read at least this often even when no change was announced. */
const MAX_AGE_MS = 60_000;
/** Bounds memory: the oldest entry goes first beyond this many tokens. */
const MAX_ENTRIES = 10_000;
/** `lastUsedAt` is written at most this often per token, off the request path. */
const TOUCH_EVERY_MS = 60_000;

const hits = tallyCounter(grantLookups, { result: 'hit' });

/** A grant kept in memory, with when its token's use was last recorded. */
interface Entry {
  grant: Grant;
  touchedAt: number;
}

/**
 * Resolves `X-Sqlite-Token`s for the CRUD calls, from memory after the first call: one Map lookup
 * instead of four PostgreSQL reads (token, site routing, plan, placement). Correct across replicas
 * because every change that alters a grant is announced by NOTIFY and drops the affected entries
 * on every replica: a revoke (CHANNELS.sqliteGrants), a slug or domain change (routes), a site
 * removed (site events). The writing replica drops its own entries before it answers; a lost listening
 * connection drops everything on reconnect; no entry lives longer than a minute regardless.
 */
export class TokenGrants {
  private readonly cache = new GroupedCache<Entry>({ maxEntries: MAX_ENTRIES, maxAgeMs: MAX_AGE_MS });
  private readonly unsubscribe: Array<() => unknown> = [];
  /** The API's own origin (its base URL's): first-party pages, accepted beside a site's origins. */
  readonly apiOrigin: string;

  constructor(
    private readonly deps: {
      config: Pick<Config, 'baseUrl' | 'sitesDomain'>;
      platform: Platform;
      tokens: SqliteTokens;
      logger: Logger;
    },
  ) {
    this.apiOrigin = new URL(deps.config.baseUrl).origin;
  }

  /** Subscribes to the changes that invalidate grants (every replica calls this at start). */
  async listen(store: Store, events: SiteEvents): Promise<void> {
    this.unsubscribe.push(
      await store.listen(
        CHANNELS.sqliteGrants,
        (payload) => this.forgetSite(Number(payload)),
        () => this.forgetAll(),
      ),
      // A grant holds its site's origins (routes) and its database (gone with the site); the
      // site's files and deploys are none of its business.
      events.subscribe({
        routesChanged: () => this.forgetAll(),
        siteRemoved: (siteId) => this.forgetSite(siteId),
        missed: () => this.forgetAll(),
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.unsubscribe.splice(0).map((stop) => stop()));
    this.forgetAll();
  }

  /** The grant of a valid token; SQLITE_TOKEN_INVALID when unknown, revoked or expired. */
  async resolve(token: string | undefined): Promise<Grant> {
    const now = Date.now();
    const key = this.keyOf(token);
    let entry = this.cache.get(key, now);
    if (entry) hits.inc();
    else {
      grantLookups.inc({ result: 'miss' });
      // Unknown or failed tokens are not kept: a flood of made-up tokens must not fill memory.
      entry = await this.cache.load(
        key,
        async () => ({ grant: await this.load(token as string), touchedAt: now }),
        (loaded) => loaded.grant.database.siteId,
      );
    }
    return this.valid(entry, now);
  }

  /**
   * `resolve` answered from memory, without a promise (the fast path's admission): the grant when
   * the token's is cached, undefined when it has to be loaded (then `resolve`); throws as it does.
   */
  cached(token: string | undefined): Grant | undefined {
    const now = Date.now();
    const entry = this.cache.get(this.keyOf(token), now);
    if (!entry) return undefined;
    hits.inc();
    return this.valid(entry, now);
  }

  /** The cache key of a token of a plausible length (SQLITE_TOKEN_INVALID for any other). */
  private keyOf(token: string | undefined): string {
    if (!token || token.length < 16 || token.length > 200) throw new AppError('SQLITE_TOKEN_INVALID');
    return hashSecret(token);
  }

  /** The grant of an entry still valid now (its last use recorded now and then). */
  private valid(entry: Entry, now: number): Grant {
    const { grant } = entry;
    const { revokedAt, expiresAt } = grant.token;
    if (revokedAt || (expiresAt && expiresAt.getTime() <= now)) throw new AppError('SQLITE_TOKEN_INVALID');
    if (now - entry.touchedAt > TOUCH_EVERY_MS) {
      entry.touchedAt = now;
      this.deps.tokens
        .touch(grant.token.id)
        .catch((err: unknown) => this.deps.logger.warn({ err }, 'sqlite token last use not recorded'));
    }
    return grant;
  }

  /** Drops the grants of one site (its tokens, origins or existence changed). */
  forgetSite(siteId: number): void {
    this.cache.forgetGroup(siteId);
  }

  forgetAll(): void {
    this.cache.forgetAll();
  }

  private async load(token: string): Promise<Grant> {
    const found = await this.deps.tokens.authenticate(token);
    const [origins, contact] = await Promise.all([
      siteOrigins(this.deps.config, this.deps.platform, found.database.siteId),
      this.deps.platform.accountContact(found.database.accountId),
    ]);
    return { ...found, origins, plan: cappedPlan(planFor(contact?.plan ?? 'free'), found.database) };
  }
}

/** The plan with the database's own caps (a SqliteDatabase's spec) where they are lower. */
export function cappedPlan(plan: Plan, database: Pick<SqliteDatabaseRow, 'maxSizeBytes' | 'maxUsers'>): Plan {
  return {
    ...plan,
    maxSqliteBytes: lowerCap(plan.maxSqliteBytes, database.maxSizeBytes),
    maxSqliteUsers: lowerCap(plan.maxSqliteUsers, database.maxUsers),
  };
}

/** The lower of two caps, null meaning none. */
export const lowerCap = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : Math.min(a, b);
