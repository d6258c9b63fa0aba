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
const REFRESH_MS = SESSION_REFRESH_DAYS * 86_400_000;

const hits = tallyCounter(sessionLookups, { result: 'hit' });

/**
 * The user sessions of CRUD calls (`X-Sqlite-User-Token` with a token that requires users), from
 * memory after their first check on this replica. Every change to a pool's sessions or users
 * (logout, password change or reset, a user changed or deleted) is announced by UserPools with
 * NOTIFY in its transaction and drops that database's entries on every replica — before the
 * answer on the replica that made it. A session near its refresh is read again (PostgreSQL
 * extends it there); a lost listening connection drops everything; entries live a minute at most.
 * A call forwarded by another replica is read `fresh`: that replica may have made a change whose
 * NOTIFY has not reached this one yet. The user routes (me, users, …) always read PostgreSQL.
 */
export class SessionCache {
  private readonly cache = new GroupedCache<SignedIn & { databaseId: number }>({
    maxEntries: MAX_ENTRIES,
    maxAgeMs: MAX_AGE_MS,
  });
  private unlisten: (() => Promise<void>) | undefined;

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
    if (fresh) this.cache.drop(key);
    else {
      const kept = this.cache.get(key);
      if (kept && kept.databaseId === database.id && kept.expiresAt.getTime() - Date.now() > REFRESH_MS) {
        hits.inc();
        return kept;
      }
    }
    sessionLookups.inc({ result: 'miss' });
    // Read from PostgreSQL (which extends a session near its end), kept under its database.
    return this.cache.load(
      key,
      async () => ({ ...(await this.users.authenticate(database, token)), databaseId: database.id }),
      (signedIn) => signedIn.databaseId,
    );
  }

  forgetDatabase(databaseId: number): void {
    this.cache.forgetGroup(databaseId);
  }

  forgetAll(): void {
    this.cache.forgetAll();
  }
}
