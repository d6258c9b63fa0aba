import client from 'prom-client';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { foldTallies, registry, tallyCounter, type Logger } from '../observability/index.js';
import { hashSecret, planFor, type Plan, type Platform, type SiteEvents } from '../platform/index.js';
import type { Store } from '../store/index.js';
import { siteOrigins } from './origins.js';
import type { SqliteDatabaseRow, SqliteTokenRow } from './tables.js';
import { GRANTS_CHANGED_CHANNEL, type SqliteTokens } from './tokens.js';

/** A scoped token resolved with everything a call needs: its database, origins and plan caps. */
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

const lookups = new client.Counter({
  name: 'hostplane_sqlite_grant_lookups_total',
  collect: foldTallies,
  help: 'Scoped-token resolutions by result (hit: from memory, miss: read from PostgreSQL)',
  labelNames: ['result'] as const,
  registers: [registry],
});
const hits = tallyCounter(lookups, { result: 'hit' });

interface Entry {
  grant: Promise<Grant>;
  siteId?: number;
  loadedAt: number;
  touchedAt: number;
}

/**
 * Resolves `X-Sqlite-Token`s for the CRUD calls, from memory after the first call: one Map lookup
 * instead of four PostgreSQL reads (token, site routing, plan, placement). Correct across replicas
 * because every change that alters a grant is announced by NOTIFY and drops the affected entries
 * on every replica: a revoke (this channel), a slug or domain change (routes), a site deleted
 * (site changed). The writing replica drops its own entries before it answers; a lost listening
 * connection drops everything on reconnect; no entry lives longer than a minute regardless.
 */
export class TokenGrants {
  private readonly entries = new Map<string, Entry>();
  /** Keys by site (a site changes often, e.g. at every upload: no scan of every entry). */
  private readonly keysBySite = new Map<number, Set<string>>();
  /** Keys still loading: they may have read the state from before a change, so any change drops them. */
  private readonly loading = new Set<string>();
  private readonly unsubscribe: Array<() => unknown> = [];

  constructor(
    private readonly deps: {
      config: Pick<Config, 'baseUrl' | 'sitesDomain'>;
      platform: Platform;
      tokens: SqliteTokens;
      logger: Logger;
    },
  ) {}

  /** Subscribes to the changes that invalidate grants (every replica calls this at start). */
  async listen(store: Store, events: SiteEvents): Promise<void> {
    this.unsubscribe.push(
      await store.listen(
        GRANTS_CHANGED_CHANNEL,
        (payload) => this.forgetSite(Number(payload)),
        () => this.forgetAll(),
      ),
      events.onRoutesChanged(() => this.forgetAll()),
      events.onChanged((siteId) => (siteId === 'all' ? this.forgetAll() : this.forgetSite(siteId))),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.unsubscribe.splice(0).map((stop) => stop()));
    this.forgetAll();
  }

  /** The grant of a valid token; SQLITE_TOKEN_INVALID when unknown, revoked or expired. */
  async resolve(token: string | undefined): Promise<Grant> {
    if (!token || token.length < 16 || token.length > 200) throw new AppError('SQLITE_TOKEN_INVALID');
    const key = hashSecret(token);
    const now = Date.now();
    let entry = this.entries.get(key);
    if (entry && now - entry.loadedAt > MAX_AGE_MS) {
      this.drop(key);
      entry = undefined;
    }
    if (!entry) {
      lookups.inc({ result: 'miss' });
      entry = { grant: this.load(token), loadedAt: now, touchedAt: now };
      const loading = entry;
      this.remember(key, loading);
      // Unknown or failed tokens are not kept: a flood of made-up tokens must not fill memory.
      loading.grant.then(
        (grant) => {
          if (this.entries.get(key) !== loading) return; // dropped meanwhile
          this.loading.delete(key);
          loading.siteId = grant.database.siteId;
          let keys = this.keysBySite.get(loading.siteId);
          if (!keys) this.keysBySite.set(loading.siteId, (keys = new Set()));
          keys.add(key);
        },
        () => this.entries.get(key) === loading && this.drop(key),
      );
    } else {
      hits.inc();
    }
    const grant = await entry.grant;
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
    if (!Number.isInteger(siteId)) return this.forgetAll();
    for (const key of [...(this.keysBySite.get(siteId) ?? []), ...this.loading]) this.drop(key);
  }

  forgetAll(): void {
    this.entries.clear();
    this.keysBySite.clear();
    this.loading.clear();
  }

  private remember(key: string, entry: Entry): void {
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.drop(oldest);
    }
    this.entries.set(key, entry);
    this.loading.add(key);
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.loading.delete(key);
    if (entry.siteId === undefined) return;
    const keys = this.keysBySite.get(entry.siteId);
    keys?.delete(key);
    if (keys?.size === 0) this.keysBySite.delete(entry.siteId);
  }

  private async load(token: string): Promise<Grant> {
    const found = await this.deps.tokens.authenticate(token);
    const [origins, contact] = await Promise.all([
      siteOrigins(this.deps.config, this.deps.platform, found.database.siteId),
      this.deps.platform.accountContact(found.database.accountId),
    ]);
    return { ...found, origins, plan: planFor(contact?.plan ?? 'free') };
  }
}
