import { createHash } from 'node:crypto';
import client from 'prom-client';
import { AppError } from '../errors/index.js';
import { foldTallies, registry, tallyCounter } from '../observability/index.js';
import type { Store } from '../store/index.js';
import type { SqliteDatabaseRow } from './tables.js';
import { SESSIONS_CHANGED_CHANNEL, SESSION_REFRESH_DAYS, type SignedIn, type UserPools } from './users.js';

/** A safety net: a session is re-read at least this often even when no change was announced. */
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;
const REFRESH_MS = SESSION_REFRESH_DAYS * 86_400_000;

const lookups = new client.Counter({
  name: 'hostplane_sqlite_session_lookups_total',
  collect: foldTallies,
  help: 'User sessions checked on CRUD calls, by result (hit: from memory, miss: read from PostgreSQL)',
  labelNames: ['result'] as const,
  registers: [registry],
});
const hits = tallyCounter(lookups, { result: 'hit' });

interface Entry {
  signedIn: SignedIn;
  databaseId: number;
  loadedAt: number;
}

/**
 * The user sessions of CRUD calls (`X-Sqlite-User-Token` with a token that requires users), from
 * memory after their first check on this replica. Every change to a pool's sessions or users
 * (logout, password change or reset, a user changed or deleted) is announced by UserPools with
 * NOTIFY in its transaction and drops that database's entries on every replica — before the
 * answer on the replica that made it. A session near its refresh is read again (PostgreSQL
 * extends it there); a lost listening connection drops everything; entries live a minute at most.
 * The user routes (me, users, …) always read PostgreSQL.
 */
export class SessionCache {
  private readonly entries = new Map<string, Entry>();
  private readonly keysByDatabase = new Map<number, Set<string>>();
  /** Bumped by every change: a read that started before one is not kept. */
  private epoch = 0;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(private readonly users: UserPools) {}

  async listen(store: Store): Promise<void> {
    this.unlisten = await store.listen(
      SESSIONS_CHANGED_CHANNEL,
      (payload) => this.forgetDatabase(Number(payload)),
      () => this.forgetAll(),
    );
  }

  async close(): Promise<void> {
    await this.unlisten?.();
    this.forgetAll();
  }

  /** The signed-in user of a session of `database`; SQLITE_SESSION_INVALID otherwise. */
  async authenticate(database: SqliteDatabaseRow, token: string): Promise<SignedIn> {
    if (!/^[0-9a-f]{64}$/i.test(token)) throw new AppError('SQLITE_SESSION_INVALID');
    const key = createHash('sha256').update(token.toLowerCase(), 'utf8').digest('hex');
    const now = Date.now();
    const entry = this.entries.get(key);
    if (
      entry &&
      entry.databaseId === database.id &&
      now - entry.loadedAt < MAX_AGE_MS &&
      entry.signedIn.expiresAt.getTime() - now > REFRESH_MS
    ) {
      hits.inc();
      return entry.signedIn;
    }
    lookups.inc({ result: 'miss' });
    if (entry) this.drop(key);
    const epoch = this.epoch;
    const signedIn = await this.users.authenticate(database, token);
    if (epoch === this.epoch) this.remember(key, { signedIn, databaseId: database.id, loadedAt: now });
    return signedIn;
  }

  forgetDatabase(databaseId: number): void {
    if (!Number.isInteger(databaseId)) return this.forgetAll();
    this.epoch++;
    for (const key of [...(this.keysByDatabase.get(databaseId) ?? [])]) this.drop(key);
  }

  forgetAll(): void {
    this.epoch++;
    this.entries.clear();
    this.keysByDatabase.clear();
  }

  private remember(key: string, entry: Entry): void {
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.drop(oldest);
    }
    this.entries.set(key, entry);
    let keys = this.keysByDatabase.get(entry.databaseId);
    if (!keys) this.keysByDatabase.set(entry.databaseId, (keys = new Set()));
    keys.add(key);
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    const keys = this.keysByDatabase.get(entry.databaseId);
    keys?.delete(key);
    if (keys?.size === 0) this.keysByDatabase.delete(entry.databaseId);
  }
}
