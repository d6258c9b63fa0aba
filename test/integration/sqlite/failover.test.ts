import { eq, inArray, sql } from 'drizzle-orm';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { registry } from '../../../src/observability/index.js';
import { Platform } from '../../../src/platform/index.js';
import { failOverLostShards, refreshShardGauges, Shards, startFailover } from '../../../src/sqlite/index.js';
import { sqliteDatabases, sqliteLeases, sqliteShards } from '../../../src/sqlite/tables.js';
import { CHANNELS, migrate, openStore, type Store } from '../../../src/store/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { createDatabase } from '../../support/postgres.js';

/**
 * The failover decision on PostgreSQL: which shards are lost, which of their databases may move
 * (their lease ran out; they have a replica), where they go (the least-loaded live shard under
 * its cap), and that rounds racing each other move every database once. Shards and leases are
 * rows here, aged with PostgreSQL's clock; test/e2e/sqlite-failover.test.ts runs real shards.
 */
describe('SQLite failover of lost shards', () => {
  const logger = createLogger('silent');
  const opened: Store[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });
  /** A store on `databaseUrl` (its own pool: as another process would have), closed after the test. */
  const storeOn = async (databaseUrl: string) => {
    const store = await openStore({ databaseUrl });
    opened.push(store);
    return store;
  };

  async function cluster() {
    const databaseUrl = await createDatabase(inject('postgresUrl'));
    const store = await storeOn(databaseUrl);
    await migrate(store);
    const site = await new Platform(store.db).createSite({
      email: 'f@example.com',
      slug: 'failover',
      plan: 'free',
    });
    let n = 0;
    const place = async (shard: string, fields: Partial<typeof sqliteDatabases.$inferInsert> = {}) => {
      const [row] = await store.db
        .insert(sqliteDatabases)
        .values({
          siteId: site.siteId,
          accountId: site.accountId,
          path: `db${++n}.sqlite`,
          shard,
          replicationState: 'replicating',
          ...fields,
        })
        .returning({ id: sqliteDatabases.id });
      return row!.id;
    };
    /** A shard row whose last heartbeat was `agoMs` ago (PostgreSQL's clock). */
    const shard = async (name: string, agoMs: number, extra: { leftAgoMs?: number } = {}) => {
      await store.db.insert(sqliteShards).values({
        name,
        url: `http://127.0.0.1:1/${name}`,
        heartbeatAt: sql`now() - ${`${agoMs} milliseconds`}::interval`,
        leftAt:
          extra.leftAgoMs === undefined ? null : sql`now() - ${`${extra.leftAgoMs} milliseconds`}::interval`,
      });
    };
    const lease = async (databaseId: number, shardName: string, expiresInMs: number) => {
      await store.db.insert(sqliteLeases).values({
        databaseId,
        shard: shardName,
        expiresAt: sql`now() + ${`${expiresInMs} milliseconds`}::interval`,
      });
    };
    const placement = async (ids: number[]) => {
      const rows = await store.db
        .select({
          id: sqliteDatabases.id,
          shard: sqliteDatabases.shard,
          blocked: sqliteDatabases.failoverBlocked,
        })
        .from(sqliteDatabases)
        .where(inArray(sqliteDatabases.id, ids));
      return new Map(rows.map((r) => [r.id, r]));
    };
    return { store, databaseUrl, place, shard, lease, placement };
  }

  const counter = async (name: string, labels: Record<string, string>) => {
    const metric = await registry.getSingleMetric(name)?.get();
    const match = metric?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x));
    return match?.value ?? 0;
  };

  it('places a lost shard’s databases on the least-loaded live shards within each cap, once their leases ran out', async () => {
    const { store, place, shard, lease, placement } = await cluster();
    await shard('gone', 60_000); // silent for a minute: lost
    await shard('live-a', 1_000);
    await shard('live-b', 2_000);
    await shard('stale-c', 25_000); // missed two heartbeats: no target
    await shard('drained-d', 1_000);
    await store.db.update(sqliteShards).set({ draining: true }).where(eq(sqliteShards.name, 'drained-d'));
    await place('live-a');
    await place('live-a');
    const lost = [];
    for (let i = 0; i < 5; i++) lost.push(await place('gone'));
    await lease(lost[0]!, 'gone', -1_000); // ran out: taken over by the new owner
    const leased = await place('gone');
    await lease(leased, 'gone', 30_000); // still live: not yet
    const unreplicated = await place('gone', { replicationEnabled: false });
    const neverReplicated = await place('gone', { replicationState: 'off' });

    const outcomes = await failOverLostShards(store.db, { afterMs: 20_000, maxDatabases: 4 });
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]!.shard).toBe('gone');
    expect(outcomes[0]!.goneMs).toBeGreaterThanOrEqual(60_000);
    // a 2, b 0 → b, b, a (tie by name), b, a: a reaches its cap of 4, b has 3.
    expect(outcomes[0]!.moved).toEqual([
      { databaseId: lost[0], to: 'live-b' },
      { databaseId: lost[1], to: 'live-b' },
      { databaseId: lost[2], to: 'live-a' },
      { databaseId: lost[3], to: 'live-b' },
      { databaseId: lost[4], to: 'live-a' },
    ]);
    expect(outcomes[0]!.left).toEqual([
      { databaseId: unreplicated, reason: 'no_replica' },
      { databaseId: neverReplicated, reason: 'no_replica' },
    ]);
    const rows = await placement([...lost, leased, unreplicated, neverReplicated]);
    expect(rows.get(leased)).toMatchObject({ shard: 'gone', blocked: null });
    expect(rows.get(unreplicated)).toMatchObject({ shard: 'gone', blocked: 'no_replica' });
    const [moved] = await store.db.select().from(sqliteDatabases).where(eq(sqliteDatabases.id, lost[0]!));
    expect(moved).toMatchObject({ shard: 'live-b', movedFrom: 'gone', moveReason: 'failover' });
    expect(moved!.movedAt).toBeInstanceOf(Date);

    // Once its lease runs out, the leased one moves too: b has room (a is at its cap).
    await store.db
      .update(sqliteLeases)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(sqliteLeases.databaseId, leased));
    const later = await failOverLostShards(store.db, { afterMs: 20_000, maxDatabases: 4 });
    expect(later.flatMap((o) => o.moved)).toEqual([{ databaseId: leased, to: 'live-b' }]);
    expect(later.flatMap((o) => o.left)).toEqual([]); // the blocked ones are not reported again
  });

  it('judges a stopped shard by its stop and a silent one by at least two missed heartbeats', async () => {
    const { store, place, shard, placement } = await cluster();
    await shard('live', 1_000);
    await shard('stopped-recently', 0, { leftAgoMs: 3_000 });
    await shard('stopped-long-ago', 0, { leftAgoMs: 6_000 });
    await shard('quiet', 15_000); // one missed heartbeat: not lost, whatever the setting
    await shard('silent', 21_000);
    const ids = {
      recent: await place('stopped-recently'),
      long: await place('stopped-long-ago'),
      quiet: await place('quiet'),
      silent: await place('silent'),
    };
    const outcomes = await failOverLostShards(store.db, { afterMs: 5_000, maxDatabases: 10 });
    expect(outcomes.map((o) => o.shard).sort()).toEqual(['silent', 'stopped-long-ago']);
    const rows = await placement(Object.values(ids));
    expect(rows.get(ids.recent)!.shard).toBe('stopped-recently');
    expect(rows.get(ids.quiet)!.shard).toBe('quiet');
    expect(rows.get(ids.long)!.shard).toBe('live');
    expect(rows.get(ids.silent)!.shard).toBe('live');

    // A shard that stops and starts again within the bound keeps its databases (Shards is real).
    const back = new Shards(store.db, { name: 'stopped-recently', url: 'http://127.0.0.1:2' });
    await back.start();
    expect(await failOverLostShards(store.db, { afterMs: 5_000, maxDatabases: 10 })).toEqual([]);
    await back.stop(); // left now: lost 5 s from now, not at once
    expect(await failOverLostShards(store.db, { afterMs: 5_000, maxDatabases: 10 })).toEqual([]);
    await store.db
      .update(sqliteShards)
      .set({ leftAt: sql`now() - interval '6 seconds'` })
      .where(eq(sqliteShards.name, 'stopped-recently'));
    const moved = await failOverLostShards(store.db, { afterMs: 5_000, maxDatabases: 10 });
    // 'quiet' (one heartbeat missed) is still live, and holds fewer databases than 'live' now.
    expect(moved.flatMap((o) => o.moved)).toEqual([{ databaseId: ids.recent, to: 'quiet' }]);
  });

  it('leaves the databases when no live shard has room: marked, logged and counted once, retried later', async () => {
    const { store, place, shard, placement } = await cluster();
    await shard('gone', 60_000);
    await shard('full', 1_000);
    await place('full');
    const ids = [await place('gone'), await place('gone')];
    const before = {
      blocked: await counter('hostplane_sqlite_failovers_total', { outcome: 'blocked' }),
      noCapacity: await counter('hostplane_sqlite_failover_databases_total', { result: 'no_capacity' }),
      moved: await counter('hostplane_sqlite_failover_databases_total', { result: 'moved' }),
    };
    const failover = startFailover({ db: store.db, afterMs: 20_000, maxDatabases: 1, logger });
    try {
      const first = await failover.runOnce();
      expect(first.flatMap((o) => o.left)).toEqual(
        ids.map((databaseId) => ({ databaseId, reason: 'no_capacity' })),
      );
      for (const row of (await placement(ids)).values())
        expect(row).toMatchObject({ shard: 'gone', blocked: 'no_capacity' });
      // Asked again at once: blocked ones wait for the retry interval; nothing is counted twice.
      expect(await failover.runOnce()).toEqual([]);
      expect(await counter('hostplane_sqlite_failovers_total', { outcome: 'blocked' })).toBe(
        before.blocked + 1,
      );
      expect(await counter('hostplane_sqlite_failover_databases_total', { result: 'no_capacity' })).toBe(
        before.noCapacity + 2,
      );
    } finally {
      await failover.stop();
    }
    // A new shard joins: the next round (the retry) places them there, and clears the mark.
    await shard('new', 0);
    const retried = await failOverLostShards(store.db, { afterMs: 20_000, maxDatabases: 1 });
    expect(retried.flatMap((o) => o.moved)).toEqual([{ databaseId: ids[0], to: 'new' }]);
    const rows = await placement(ids);
    expect(rows.get(ids[0]!)).toMatchObject({ shard: 'new', blocked: null });
    expect(rows.get(ids[1]!)).toMatchObject({ shard: 'gone', blocked: 'no_capacity' });
    expect(await counter('hostplane_sqlite_failover_databases_total', { result: 'moved' })).toBe(
      before.moved,
    );
  });

  it('tells of a failover it cannot make as of a move (the resources’ status follows at once), once per database', async () => {
    const { store, place, shard } = await cluster();
    await shard('gone', 60_000);
    await shard('full', 1_000);
    await place('full');
    const noReplica = await place('gone', { replicationEnabled: false });
    const noRoom = await place('gone');
    const notified: number[] = [];
    const unlisten = await store.listen(CHANNELS.sqlitePlacement, (payload) =>
      notified.push(Number(payload)),
    );
    try {
      const first = await failOverLostShards(store.db, { afterMs: 20_000, maxDatabases: 1 });
      expect(first.flatMap((o) => o.left).map((l) => l.reason)).toEqual(['no_replica', 'no_capacity']);
      await expect.poll(() => [...notified].sort((a, b) => a - b)).toEqual([noReplica, noRoom]);
      // Still blocked for the same reasons: nothing new to tell. Then a shard with room joins and
      // the next round moves one: its notice comes after any the repeated round would have sent.
      await failOverLostShards(store.db, { afterMs: 20_000, maxDatabases: 1 });
      await shard('new', 0);
      await failOverLostShards(store.db, { afterMs: 20_000, maxDatabases: 1 });
      await expect.poll(() => notified.length).toBe(3);
      expect(notified.slice(2)).toEqual([noRoom]);
    } finally {
      await unlisten();
    }
  });

  it('counts shards live, lost (gone while databases are placed on it) and left, and blocked databases, for the alerts', async () => {
    const { store, place, shard, placement } = await cluster();
    const gauge = (name: string, labels: Record<string, string>) => counter(name, labels);
    await shard('live', 1_000);
    await shard('silent-briefly', 12_000); // one heartbeat missed: still live
    await shard('gone-holding', 60_000);
    await shard('gone-empty', 60_000);
    await shard('stopped-recently', 60_000, { leftAgoMs: 2_000 }); // its database unserved already
    await place('live');
    // A mark left from an outage its shard came through without a restart: not counted.
    await place('live', { failoverBlocked: 'no_replica' });
    const held = await place('gone-holding');
    await place('stopped-recently');
    await store.db
      .update(sqliteDatabases)
      .set({ failoverBlocked: 'no_capacity' })
      .where(eq(sqliteDatabases.id, held));
    await refreshShardGauges(store.db);
    expect(await gauge('hostplane_sqlite_shards', { state: 'live' })).toBe(2);
    expect(await gauge('hostplane_sqlite_shards', { state: 'lost' })).toBe(2);
    expect(await gauge('hostplane_sqlite_shards', { state: 'left' })).toBe(1);
    expect(await gauge('hostplane_sqlite_failover_blocked_databases', { reason: 'no_capacity' })).toBe(1);
    expect(await gauge('hostplane_sqlite_failover_blocked_databases', { reason: 'no_replica' })).toBe(0);
    // Its database moved: 'gone-holding' holds none (left), nothing is blocked; the recent stop
    // waits for the failover's 20 s and stays lost.
    await failOverLostShards(store.db, { afterMs: 20_000, maxDatabases: 10 });
    expect((await placement([held])).get(held)).toMatchObject({ shard: 'silent-briefly', blocked: null });
    await refreshShardGauges(store.db);
    expect(await gauge('hostplane_sqlite_shards', { state: 'lost' })).toBe(1);
    expect(await gauge('hostplane_sqlite_shards', { state: 'left' })).toBe(2);
    expect(await gauge('hostplane_sqlite_failover_blocked_databases', { reason: 'no_capacity' })).toBe(0);
  });

  it('moves each database once when rounds race (several deciders at the same moment)', async () => {
    const { store, databaseUrl, place, shard, placement } = await cluster();
    await shard('gone', 60_000);
    await shard('live-a', 1_000);
    await shard('live-b', 1_000);
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) ids.push(await place('gone'));
    const notified: number[] = [];
    const unlisten = await store.listen(CHANNELS.sqlitePlacement, (payload) =>
      notified.push(Number(payload)),
    );
    // Four deciders on their own connections (a store each), started together.
    const deciders: Store[] = [store, ...(await Promise.all([1, 2, 3].map(() => storeOn(databaseUrl))))];
    try {
      const outcomes = await Promise.all(
        deciders.map((d) => failOverLostShards(d.db, { afterMs: 20_000, maxDatabases: 15 })),
      );
      const moved = outcomes.flat().flatMap((o) => o.moved);
      expect(moved.map((m) => m.databaseId).sort((x, y) => x - y)).toEqual(ids);
      const rows = await placement(ids);
      for (const { databaseId, to } of moved) expect(rows.get(databaseId)!.shard).toBe(to);
      const load = [...rows.values()].reduce<Record<string, number>>(
        (acc, r) => ({ ...acc, [r.shard!]: (acc[r.shard!] ?? 0) + 1 }),
        {},
      );
      expect(load).toEqual({ 'live-a': 15, 'live-b': 15 });
      await expect.poll(() => notified.length).toBe(30);
      expect(new Set(notified).size).toBe(30);
    } finally {
      await unlisten();
    }
  });
});
