import { createHash } from 'node:crypto';
import { AppError } from '../errors/index.js';
import { tallyCounter } from '../observability/index.js';
import { CHANNELS, type Store } from '../store/index.js';
import { GroupedCache } from './grouped-cache.js';
import type { SqliteDatabaseRow } from './tables.js';
import { SESSION_REFRESH_DAYS, type SignedIn, type UserPools } from './users.js';
import { sessionLookups } from './metrics.js';

/** A safety net: a session is re-read at least this often even when no change was announced. */
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;
/** How long a change made here makes the calls this replica forwards read sessions fresh. */
const CHANGED_HERE_MS = 30_000;
const REFRESH_MS = SESSION_REFRESH_DAYS * 86_400_000;

const hits = tallyCounter(sessionLookups, { result: 'hit' });

/**
 * The user sessions of CRUD calls (`X-Sqlite-User-Token` with a token that requires users), from
 * memory after their first check on this replica. Every change to a pool's sessions or users
 * (logout, password change or reset, a user changed or deleted) is announced by UserPools with
 * NOTIFY in its transaction and drops that database's entries on every replica — before the
 * answer on the replica that made it. A session near its refresh is read again (PostgreSQL
 * extends it there); a lost listening connection drops everything; entries live a minute at most.
 * A replica that changed a database's pool in the last 30 s marks the calls it forwards to the
 * owner: the owner reads their sessions `fresh`, since the change's NOTIFY may not have reached it
 * yet (a client reads its own writes through the replica it calls). The user routes (me, users, …)
 * always read PostgreSQL.
 */
export class SessionCache {
  private readonly cache = new GroupedCache<SignedIn & { databaseId: number }>({
    maxEntries: MAX_ENTRIES,
    maxAgeMs: MAX_AGE_MS,
  });
  private unlisten: (() => Promise<void>) | undefined;
  /** Databases whose pools changed on this replica lately, by when (oldest first). */
  private readonly changedHere = new Map<number, number>();

  constructor(private readonly users: UserPools) {}

  async listen(store: Store): Promise<void> {
    this.unlisten = await store.listen(
      CHANNELS.sqliteSessions,
      (payload) => this.forgetDatabase(Number(payload)),
      () => this.forgetAll(),
    );
  }

  async close(): Promise<void> {
    await this.unlisten?.();
    this.forgetAll();
  }

  /**
   * The signed-in user of a session of `database`; SQLITE_SESSION_INVALID otherwise. `fresh`: read
   * from PostgreSQL, in place of what is kept.
   */
  async authenticate(database: SqliteDatabaseRow, token: string, fresh = false): Promise<SignedIn> {
    if (!/^[0-9a-f]{64}$/i.test(token)) throw new AppError('SQLITE_SESSION_INVALID');
    const key = createHash('sha256').update(token.toLowerCase(), 'utf8').digest('hex');
    const kept = fresh ? undefined : this.cache.get(key);
    if (kept && kept.databaseId === database.id && kept.expiresAt.getTime() - Date.now() > REFRESH_MS) {
      hits.inc();
      return kept;
    }
    sessionLookups.inc({ result: 'miss' });
    // Read from PostgreSQL (which extends a session near its end), kept under its database.
    // A session PostgreSQL refuses is not kept either (a fresh read may overtake a kept entry).
    return this.cache
      .load(
        key,
        async () => ({ ...(await this.users.authenticate(database, token)), databaseId: database.id }),
        (signedIn) => signedIn.databaseId,
      )
      .catch((err: unknown) => {
        this.cache.drop(key);
        throw err;
      });
  }

  /** A change to a pool made by this replica: its sessions go, and its forwarded calls read fresh. */
  changedHereNow(databaseId: number): void {
    this.forgetDatabase(databaseId);
    this.changedHere.delete(databaseId);
    this.changedHere.set(databaseId, Date.now());
    if (this.changedHere.size > MAX_ENTRIES) this.changedHere.delete(this.changedHere.keys().next().value!);
  }

  /** Whether this replica changed the pool of `databaseId` lately (see changedHereNow). */
  changedHereLately(databaseId: number): boolean {
    const at = this.changedHere.get(databaseId);
    if (at === undefined) return false;
    if (Date.now() - at < CHANGED_HERE_MS) return true;
    this.changedHere.delete(databaseId);
    return false;
  }

  forgetDatabase(databaseId: number): void {
    this.cache.forgetGroup(databaseId);
  }

  forgetAll(): void {
    this.cache.forgetAll();
  }
}
