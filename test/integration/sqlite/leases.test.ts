import { eq, sql } from 'drizzle-orm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Platform } from '../../../src/platform/index.js';
import { LEASE_TTL_MS, Shards } from '../../../src/sqlite/index.js';
import { sqliteDatabases, sqliteLeases } from '../../../src/sqlite/tables.js';
import { migrate } from '../../../src/store/index.js';
import { eventually } from '../../support/eventually.js';
import { storesClosedAfterEach } from '../../support/stores.js';

/**
 * A shard acts on a lease only while it is fresh: one that could not renew for two thirds of the
 * TTL asks PostgreSQL again before it serves (a shard cut off from PostgreSQL stops before another
 * may take its databases), and learns there when another shard has taken it.
 */
describe('SQLite leases: acted on only while confirmed', () => {
  const openStore = storesClosedAfterEach();
  afterEach(() => vi.restoreAllMocks());

  async function placedDatabase(backend: 'pglite' | 'postgres' = 'pglite') {
    const store = await openStore(backend);
    await migrate(store);
    const site = await new Platform(store.db).createSite({
      email: 'l@example.com',
      slug: 'leases',
      plan: 'free',
    });
    const place = async (path: string) => {
      const [row] = await store.db
        .insert(sqliteDatabases)
        .values({ siteId: site.siteId, accountId: site.accountId, path, shard: 'lease-a' })
        .returning({ id: sqliteDatabases.id });
      return row!.id;
    };
    return { store, id: await place('a.sqlite'), place };
  }

  it('is confirmed after acquiring; stale after two thirds of the TTL; confirmed again by PostgreSQL', async () => {
    const { store, id } = await placedDatabase();
    const shards = new Shards(store.db, { name: 'lease-a', url: 'http://127.0.0.1:1' });
    expect(await shards.acquire(id)).toBe(true);
    expect(shards.confirmed(id)).toBe(true);
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + (LEASE_TTL_MS * 2) / 3 + 1);
    expect(shards.confirmed(id)).toBe(false);
    expect(await shards.acquire(id)).toBe(true); // still ours in PostgreSQL: renewed
    expect(shards.confirmed(id)).toBe(true);
  });

  it('learns that another shard took the lease once it had expired', async () => {
    const { store, id } = await placedDatabase();
    const a = new Shards(store.db, { name: 'lease-a', url: 'http://127.0.0.1:1' });
    expect(await a.acquire(id)).toBe(true);
    // a went quiet past the TTL; b took the lease (after the database was placed on it).
    await store.db.update(sqliteDatabases).set({ shard: 'lease-b' }).where(eq(sqliteDatabases.id, id));
    await store.db
      .update(sqliteLeases)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(sqliteLeases.databaseId, id));
    const b = new Shards(store.db, { name: 'lease-b', url: 'http://127.0.0.1:2' });
    expect(await b.acquire(id)).toBe(true);
    vi.spyOn(Date, 'now').mockReturnValue(Date.now() + LEASE_TTL_MS);
    expect(a.confirmed(id)).toBe(false);
    expect(await a.acquire(id)).toBe(false);
  });

  it('is not taken by a shard the database is not placed on', async () => {
    const { store, id } = await placedDatabase();
    const other = new Shards(store.db, { name: 'lease-c', url: 'http://127.0.0.1:3' });
    expect(await other.acquire(id)).toBe(false);
  });

  it('does not take a lease acquired during a renewal round for lost', async () => {
    const { store, id, place } = await placedDatabase('postgres');
    const shards = new Shards(store.db, { name: 'lease-a', url: 'http://127.0.0.1:1' });
    const lost: number[] = [];
    shards.onLost = (ids) => lost.push(...ids);
    expect(await shards.acquire(id)).toBe(true);
    const second = await place('b.sqlite');
    // The round's UPDATE waits on a row lock; the second database is acquired meanwhile.
    await store.session(async (locker) => {
      await locker.query('begin');
      await locker.query('select 1 from sqlite_leases where database_id = $1 for update', [id]);
      // Private: the round the shard runs every 10 s, run now. The cast reaches it.
      const round = (shards as unknown as { renew(): Promise<void> }).renew();
      await eventually('the round waits on the lock', async () => {
        const rows = await store.session((watcher) =>
          watcher.query<{ n: number }>(
            `select count(*)::int as n from pg_stat_activity where query ilike 'update "sqlite_leases"%' and wait_event_type = 'Lock'`,
          ),
        );
        return rows[0]!.n > 0;
      });
      expect(await shards.acquire(second)).toBe(true);
      await locker.query('commit');
      await round;
    });
    expect(lost).toEqual([]);
    expect(shards.confirmed(id)).toBe(true);
    expect(shards.confirmed(second)).toBe(true);
  });
});
