import { eq, sql } from 'drizzle-orm';
import { describe, expect, inject, it } from 'vitest';
import { S3BlobStore, type BlobStore } from '../../../src/blob/index.js';
import { FilesService } from '../../../src/files/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { Platform, SiteEvents } from '../../../src/platform/index.js';
import { DEFAULT_REPLICA_SETTINGS, SqliteDatabases } from '../../../src/sqlite/databases.js';
import { runReplicaSweeps } from '../../../src/sqlite/replica-sweeps.js';
import { replicaKeyRoot } from '../../../src/sqlite/replication/replica-path.js';
import { sqliteDatabases, sqliteLeases, sqliteReplicaSweeps } from '../../../src/sqlite/tables.js';
import { migrate, type Store } from '../../../src/store/index.js';
import { createBucket } from '../../support/minio.js';
import { storesClosedAfterEach } from '../../support/stores.js';

const logger = createLogger('silent');

/**
 * A database removed with its site while a shard held its lease: its replica is deleted at once,
 * and once more after the lease — by whichever api replica's sweep claims the queued row first,
 * even when the process that removed it is gone.
 */
describe.each(['postgres', 'pglite'] as const)('deferred replica sweeps (%s)', (backend) => {
  const openStore = storesClosedAfterEach();

  async function setUp() {
    const store = await openStore(backend);
    await migrate(store);
    const s3 = inject('s3');
    const blobs: BlobStore = new S3BlobStore({
      bucket: await createBucket(s3),
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const platform = new Platform(store.db);
    const site = await platform.createSite({
      email: `sweep-${backend}@example.com`,
      slug: 'sweeps',
      plan: 'free',
    });
    const files = new FilesService(
      store.db,
      blobs,
      platform,
      new SiteEvents(),
      'http://localhost/console/plans',
    );
    const databases = new SqliteDatabases({
      db: store.db,
      platform,
      files,
      replicas: blobs,
      replica: DEFAULT_REPLICA_SETTINGS,
    });
    const place = async (path: string) => {
      const [row] = await store.db
        .insert(sqliteDatabases)
        .values({ siteId: site.siteId, accountId: site.accountId, path, shard: 'shard-a' })
        .returning({ id: sqliteDatabases.id });
      return { id: row!.id, siteId: site.siteId, path };
    };
    const root = (db: { id: number; siteId: number; path: string }) =>
      replicaKeyRoot(DEFAULT_REPLICA_SETTINGS.prefix, db);
    const keys = async (prefix: string) => {
      const found: string[] = [];
      for await (const object of blobs.list(prefix)) found.push(object.key);
      return found;
    };
    return { store, blobs, databases, place, root, keys };
  }

  const queued = (store: Store, id: number) =>
    store.db.select().from(sqliteReplicaSweeps).where(eq(sqliteReplicaSweeps.databaseId, id));

  it('sweeps a replica again once the held lease is over, and leaves its neighbours', async () => {
    const { store, blobs, databases, place, root, keys } = await setUp();
    const db = await place('data/app.sqlite');
    const neighbour = await place('data/app.sqlite.bak');
    await store.db
      .insert(sqliteLeases)
      .values({ databaseId: db.id, shard: 'shard-a', expiresAt: sql`now() + interval '1 hour'` });
    await blobs.put(`${root(db)}g0/ltx/0/a.ltx`, Buffer.from('ltx'));
    await blobs.put(`${root(neighbour)}g0/ltx/0/keep.ltx`, Buffer.from('ltx'));

    const removed = await databases.removeDatabase(db.id, { keepReplica: false, queueSweep: true });
    expect(removed?.sweepReplicaAgainAt?.getTime()).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(await keys(root(db))).toEqual([]); // the first sweep, at once
    const [row] = await queued(store, db.id);
    expect(row?.sweepAfter.getTime()).toBe(removed?.sweepReplicaAgainAt?.getTime());

    // The shard's Litestream wrote once more before letting go; not due yet: untouched.
    await blobs.put(`${root(db)}g0/ltx/0/late.ltx`, Buffer.from('ltx'));
    expect(await databases.sweepReplicas(logger)).toBe(0);
    expect(await keys(root(db))).toHaveLength(1);

    // The lease is over: any replica's next pass deletes it, and the queued row.
    await store.db.update(sqliteReplicaSweeps).set({ sweepAfter: sql`now() - interval '1 second'` });
    expect(await databases.sweepReplicas(logger)).toBe(1);
    expect(await keys(root(db))).toEqual([]);
    expect(await queued(store, db.id)).toEqual([]);
    expect(await keys(root(neighbour))).toHaveLength(1);
  });

  it('queues nothing when no lease was held and the replica went at once', async () => {
    const { store, databases, place } = await setUp();
    const db = await place('free.sqlite');
    const removed = await databases.removeDatabase(db.id, { keepReplica: false, queueSweep: true });
    expect(removed?.sweepReplicaAgainAt).toBeUndefined();
    expect(await queued(store, db.id)).toEqual([]);
  });

  it('two replicas sweeping at once take each due replica once; a failed one stays queued, claimed for later', async () => {
    const { store, place } = await setUp();
    const due = [await place('one.sqlite'), await place('two.sqlite'), await place('three.sqlite')];
    await store.db.insert(sqliteReplicaSweeps).values(
      due.map((d) => ({
        databaseId: d.id,
        siteId: d.siteId,
        path: d.path,
        sweepAfter: new Date(Date.now() - 1000),
      })),
    );
    const calls: number[] = [];
    const remove = async (database: { id: number }) => {
      calls.push(database.id);
      if (database.id === due[2]!.id) throw new Error('bucket out of reach');
      return 1;
    };
    const [a, b] = await Promise.all([
      runReplicaSweeps(store.db, remove, logger),
      runReplicaSweeps(store.db, remove, logger),
    ]);
    expect(a + b).toBe(2);
    expect(calls.sort()).toEqual(due.map((d) => d.id).sort());
    const left = await store.db.select().from(sqliteReplicaSweeps);
    expect(left.map((r) => r.databaseId)).toEqual([due[2]!.id]);
    expect(left[0]!.attempts).toBe(1);
    expect(left[0]!.sweepAfter.getTime()).toBeGreaterThan(Date.now() + 5 * 60_000); // claimed: not due again at once
    expect(await runReplicaSweeps(store.db, remove, logger)).toBe(0);
    expect(calls).toHaveLength(3);
  });
});
