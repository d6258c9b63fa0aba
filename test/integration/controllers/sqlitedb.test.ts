import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SITE_LABEL,
  SQLITE_DATABASE_FINALIZER,
  SQLITE_DATABASE_ID_ANNOTATION,
  SQLITE_DATABASE_ID_LABEL,
  REPLICA_SWEEP_ANNOTATION,
  apiStatus,
  resourceClient,
  type ResourceClient,
  type SiteResource,
  type SqliteDatabaseResource,
  type SqliteDatabaseSpec,
} from '../../../src/kube/index.js';
import { hashSecret } from '../../../src/platform/index.js';
import type { RunningController } from '../../../src/server/index.js';
import { DEFAULT_REPLICA_SETTINGS, failOverLostShards } from '../../../src/sqlite/index.js';
import { replicaKeyRoot } from '../../../src/sqlite/replication/replica-path.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';
import { readySite, startWithChartRbac } from '../../support/kube/cluster-api.js';
import type { TestHostplane } from '../../support/hostplane.js';

let fx: ClusterFixture;
let controller: RunningController;
/** The API in cluster mode, on the fixture's database, acting as the chart's api ServiceAccount. */
let api: TestHostplane;
let databases: ResourceClient<SqliteDatabaseResource>;
let siteId: number;
let apiKey: string;

beforeAll(async () => {
  fx = await startClusterFixture();
  ({ controller, api } = await startWithChartRbac(fx));
  databases = resourceClient('SqliteDatabase', fx.env.kubeConfig(), fx.namespace, 'test');
  ({ siteId, apiKey } = await readySite(fx, 'shop', 'shop@example.com'));
}, 180_000);

afterAll(async () => {
  await api?.stop();
  await fx?.stop();
});

const ready = (r: SqliteDatabaseResource | undefined) =>
  r?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') &&
  r.status.observedGeneration === r.metadata.generation
    ? r
    : undefined;

const waitReady = (name: string) =>
  eventually(`SqliteDatabase ${name} to be Ready`, async () => ready(await databases.get(name)));

const waitGone = (name: string, timeoutMs?: number) =>
  eventually(`SqliteDatabase ${name} to be gone`, async () => !(await databases.get(name)), timeoutMs);

const apply = (name: string, spec: Partial<SqliteDatabaseSpec>) =>
  databases.create({
    metadata: { name },
    spec: { siteRef: { name: 'shop' }, ...spec } as SqliteDatabaseSpec,
  });

async function rows<T>(query: ReturnType<typeof sql>): Promise<T[]> {
  const result = (await fx.hostplane.services.store.db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}
const countOf = async (query: ReturnType<typeof sql>) =>
  Number((await rows<{ n: string }>(query))[0]?.n ?? 0);
const databaseRow = async (id: number) =>
  (
    await rows<{ id: number; path: string; replication_enabled: boolean; shard: string | null }>(
      sql`select id, path, replication_enabled, shard from sqlite_databases where id = ${id}`,
    )
  )[0];

async function eventsOf(name: string): Promise<{ reason?: string; type?: string }[]> {
  const list = await fx.core.listNamespacedEvent({
    namespace: fx.namespace,
    fieldSelector: `involvedObject.name=${name},involvedObject.kind=SqliteDatabase`,
  });
  return list.items;
}

async function secretToken(name: string): Promise<string | undefined> {
  try {
    const secret = await fx.core.readNamespacedSecret({ name, namespace: fx.namespace });
    return Buffer.from(secret.data?.token ?? '', 'base64').toString('utf8');
  } catch (err) {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  }
}

/** The replica bucket (the fixture's MinIO bucket, which the controller was given). */
const replicas = () => fx.hostplane.services.blobs;
const replicaRoot = (path: string, id: number) =>
  replicaKeyRoot(DEFAULT_REPLICA_SETTINGS.prefix, { id, siteId, path });
async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of replicas().list(prefix)) keys.push(object.key);
  return keys;
}
/** Objects as Litestream lays them out (two lineages), standing in for a real replica. */
async function fakeReplica(path: string, id: number): Promise<string[]> {
  const root = replicaRoot(path, id);
  const keys = [`${root}g0/ltx/0/0000000000000001-0000000000000001.ltx`, `${root}g1/ltx/0/snapshot.ltx`];
  for (const key of keys) await replicas().put(key, Buffer.from('ltx'));
  return keys;
}

const install = (path: string) =>
  api.request('/api/v1/sqlite/auth/install', {
    method: 'POST',
    headers: { 'x-api-key': apiKey },
    json: { path, name: 'app', permissions: 'readwrite', requireUserAuth: false },
  });

describe('a SqliteDatabase applied with kubectl', () => {
  let created: SqliteDatabaseResource;

  beforeAll(async () => {
    await apply('app', { path: 'data/app.sqlite', shard: 'shard-7' });
    created = await waitReady('app');
  });

  it('creates the database with a readwrite token in a Secret; the status names the token, never it', async () => {
    const status = created.status!;
    expect(created.metadata.finalizers).toContain(SQLITE_DATABASE_FINALIZER);
    expect(created.metadata.annotations?.[SQLITE_DATABASE_ID_ANNOTATION]).toBe(String(status.databaseId));
    expect(created.metadata.labels).toMatchObject({
      [SQLITE_DATABASE_ID_LABEL]: String(status.databaseId),
      [SITE_LABEL]: 'shop',
    });
    expect(status).toMatchObject({
      siteId,
      shard: 'shard-7', // the pin, applied at creation
      sizeBytes: 0,
      version: 0,
      users: 0,
      // The business plan's caps.
      maxSizeBytes: 1024 ** 3,
      maxUsers: 2500,
      replicationState: 'pending',
      retentionHours: 168,
      tokenSecretName: 'sqldb-app-token',
    });
    expect(status.tokenId).toBeGreaterThan(0);
    expect(JSON.stringify(status)).not.toContain('hp_sqlite_');
    const conditions = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c.status]));
    expect(conditions).toEqual({ Ready: 'True', Replicating: 'Unknown', Restoring: 'False', Placed: 'True' });

    expect(await databaseRow(status.databaseId!)).toMatchObject({
      path: 'data/app.sqlite',
      replication_enabled: true,
      shard: 'shard-7',
    });
    const token = await secretToken('sqldb-app-token');
    expect(token).toMatch(/^hp_sqlite_/);
    const [record] = await rows<{ id: number; permissions: string; database_id: number }>(
      sql`select id, permissions, database_id from sqlite_tokens where token_hash = ${hashSecret(token!)}`,
    );
    expect(record).toEqual({ id: status.tokenId, permissions: 'readwrite', database_id: status.databaseId });
    // A database is one of its site's files.
    expect(
      await countOf(
        sql`select count(*) as n from site_files where site_id = ${siteId} and path = 'data/app.sqlite' and kind = 'database'`,
      ),
    ).toBe(1);
    await eventually('the Created event', async () =>
      (await eventsOf('app')).some((e) => e.reason === 'Created'),
    );
  });

  it('follows spec changes with observedGeneration: replication turned off', async () => {
    const current = (await databases.get('app'))!;
    const updated = await databases.replace({
      ...current,
      spec: { ...current.spec, replication: { enabled: false } },
    });
    expect(updated.metadata.generation).toBe((current.metadata.generation ?? 0) + 1);
    const after = await waitReady('app');
    expect(after.status?.observedGeneration).toBe(updated.metadata.generation);
    expect(after.status?.conditions?.every((c) => c.observedGeneration === updated.metadata.generation)).toBe(
      true,
    );
    expect(after.status?.conditions?.find((c) => c.type === 'Replicating')).toMatchObject({
      status: 'False',
      reason: 'Disabled',
    });
    expect(after.status?.retentionHours).toBeUndefined();
    expect((await databaseRow(after.status!.databaseId!))?.replication_enabled).toBe(false);
  });

  it('refuses to change its path or site (immutable), and a path not relative to the site root', async () => {
    await expect(apply('rooted', { path: '/data/rooted.sqlite' })).rejects.toSatisfy(
      (err) => apiStatus(err) === 422,
    );
    const current = (await databases.get('app'))!;
    await expect(
      databases.replace({ ...current, spec: { ...current.spec, path: 'data/other.sqlite' } }),
    ).rejects.toSatisfy((err) => apiStatus(err) === 422);
    await expect(
      databases.replace({ ...current, spec: { ...current.spec, siteRef: { name: 'elsewhere' } } }),
    ).rejects.toSatisfy((err) => apiStatus(err) === 422);
  });

  it('a second resource for the same path is refused and deleting it leaves the database alone', async () => {
    await apply('app-copy', { path: 'data/app.sqlite' });
    const copy = await eventually('the copy to be refused', async () => {
      const r = await databases.get('app-copy');
      return r?.status?.conditions?.[0]?.reason === 'DatabaseClaimed' ? r : undefined;
    });
    expect(copy.status?.conditions?.[0]?.status).toBe('False');
    await databases.delete('app-copy');
    await waitGone('app-copy');
    expect(await databaseRow(created.status!.databaseId!)).toBeDefined();
  });

  it('deleted with Delete: the row, its tokens and file entry, its Secret and its replica in S3 go', async () => {
    const databaseId = created.status!.databaseId!;
    const keys = await fakeReplica('data/app.sqlite', databaseId);
    // Neighbours whose keys start with this one's (a longer path, a longer id): theirs stay.
    const neighbours = [
      `${replicaRoot('data/app.sqlite.db', databaseId)}g0/ltx/0/keep.ltx`,
      `${replicaRoot('data/app.sqlite', databaseId * 10 + 1)}g0/ltx/0/keep.ltx`,
    ];
    for (const key of neighbours) await replicas().put(key, Buffer.from('ltx'));
    expect(await keysUnder(replicaRoot('data/app.sqlite', databaseId))).toEqual(keys);

    await databases.delete('app');
    await waitGone('app');
    expect(await databaseRow(databaseId)).toBeUndefined();
    expect(
      await countOf(sql`select count(*) as n from sqlite_tokens where database_id = ${databaseId}`),
    ).toBe(0);
    expect(
      await countOf(
        sql`select count(*) as n from site_files where site_id = ${siteId} and path = 'data/app.sqlite'`,
      ),
    ).toBe(0);
    expect(await secretToken('sqldb-app-token')).toBeUndefined();
    expect(await keysUnder(replicaRoot('data/app.sqlite', databaseId))).toEqual([]);
    expect(await keysUnder(replicaRoot('data/app.sqlite.db', databaseId))).toEqual([neighbours[0]]);
    expect(await keysUnder(replicaRoot('data/app.sqlite', databaseId * 10 + 1))).toEqual([neighbours[1]]);
    expect((await eventsOf('app')).some((e) => e.reason === 'Deleted')).toBe(true);
  });
});

describe('deletionPolicy Retain', () => {
  it('removes the database but keeps its replica in S3', async () => {
    await apply('kept', { path: 'kept.db', deletionPolicy: 'Retain' });
    const resource = await waitReady('kept');
    const databaseId = resource.status!.databaseId!;
    const keys = await fakeReplica('kept.db', databaseId);
    await databases.delete('kept');
    await waitGone('kept');
    expect(await databaseRow(databaseId)).toBeUndefined();
    expect(await secretToken('sqldb-kept-token')).toBeUndefined();
    expect(await keysUnder(replicaRoot('kept.db', databaseId))).toEqual(keys);
  });
});

describe('caps', () => {
  const scoped = (token: string, path: string, json: unknown, headers: Record<string, string> = {}) =>
    fx.hostplane.request(path, {
      method: 'POST',
      headers: { 'x-sqlite-token': token, origin: 'http://shop.localhost:8080', ...headers },
      json,
    });

  it('the spec’s caps below the plan’s are the ones the calls apply; removing them restores the plan’s', async () => {
    await apply('capped', { path: 'capped.sqlite', maxUsers: 1, maxSizeBytes: 256 * 1024 });
    const resource = await waitReady('capped');
    expect(resource.status).toMatchObject({ maxUsers: 1, maxSizeBytes: 256 * 1024 });
    const token = (await secretToken('sqldb-capped-token'))!;
    const register = (email: string) =>
      scoped(
        token,
        '/api/v1/sqlite/auth/register',
        { email, password: 'a long passphrase 42' },
        { 'x-api-key': apiKey },
      );
    expect((await register('first@example.com')).status).toBe(201);
    const second = await register('second@example.com');
    expect(second.status).toBe(402);
    expect(await second.json()).toMatchObject({ error: 'USER_POOL_LIMIT_REACHED', user_limit: 1 });

    expect((await scoped(token, '/api/v1/sqlite/exec', { sql: 'CREATE TABLE blobs (b BLOB)' })).status).toBe(
      200,
    );
    const big = await scoped(token, '/api/v1/sqlite/exec', {
      sql: 'INSERT INTO blobs VALUES (randomblob(400000))',
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ limitBytes: 256 * 1024 });

    // The plan's caps again: the grant caches hear of the change before the status says so.
    const current = (await databases.get('capped'))!;
    await databases.replace({
      ...current,
      spec: { siteRef: current.spec.siteRef, path: current.spec.path, replication: { enabled: true } },
    } as SqliteDatabaseResource);
    const relaxed = await eventually('the plan’s caps', async () => {
      const r = ready(await databases.get('capped'));
      return r?.status?.maxUsers === 2500 ? r : undefined;
    });
    expect(relaxed.status?.maxSizeBytes).toBe(1024 ** 3);
    expect((await register('second@example.com')).status).toBe(201);
    expect(await eventsOf('capped')).toEqual(
      expect.arrayContaining([expect.objectContaining({ reason: 'CapsChanged' })]),
    );
    // A shard held it: the finalizer sweeps its replica once more when the lease has run out.
    await databases.delete('capped');
    await waitGone('capped', 60_000);
  }, 100_000);
});

describe('deleting a database a shard holds', () => {
  it('sweeps the replica again once the shard’s lease has run out (late Litestream writes go too)', async () => {
    await apply('busy', { path: 'busy.sqlite' });
    const resource = await waitReady('busy');
    const databaseId = resource.status!.databaseId!;
    const token = (await secretToken('sqldb-busy-token'))!;
    // A write through the API: a shard opens the database and takes its lease.
    const res = await fx.hostplane.request('/api/v1/sqlite/exec', {
      method: 'POST',
      headers: { 'x-sqlite-token': token, origin: 'http://shop.localhost:8080' },
      json: { sql: 'CREATE TABLE notes (body TEXT)' },
    });
    expect(res.status).toBe(200);
    expect(
      await countOf(sql`select count(*) as n from sqlite_leases where database_id = ${databaseId}`),
    ).toBe(1);
    await fakeReplica('busy.sqlite', databaseId);

    await databases.delete('busy');
    const sweeping = await eventually('the second sweep to be scheduled', async () => {
      const r = await databases.get('busy');
      return r?.metadata.annotations?.[REPLICA_SWEEP_ANNOTATION] ? r : undefined;
    });
    expect(await databaseRow(databaseId)).toBeUndefined();
    expect(await keysUnder(replicaRoot('busy.sqlite', databaseId))).toEqual([]);
    // What the shard's Litestream could still upload before it lets the database go.
    const late = `${replicaRoot('busy.sqlite', databaseId)}g0/ltx/0/late.ltx`;
    await replicas().put(late, Buffer.from('ltx'));
    const { after } = JSON.parse(sweeping.metadata.annotations![REPLICA_SWEEP_ANNOTATION]!) as {
      after: string;
    };
    expect(Date.parse(after)).toBeGreaterThan(Date.now());
    // The resource stays until then (the finalizer holds it), and goes with the late write.
    expect(await databases.get('busy')).toBeDefined();
    await eventually('the resource to be gone', async () => !(await databases.get('busy')), 60_000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(after));
    expect(await keysUnder(replicaRoot('busy.sqlite', databaseId))).toEqual([]);
  }, 90_000);
});

describe('a Site deleted with deletionPolicy Delete', () => {
  it('takes its SqliteDatabases with it, through their finalizers', async () => {
    await fx.sites.create({
      metadata: { name: 'temp' },
      spec: { slug: 'temp', deletionPolicy: 'Delete' } as SiteResource['spec'],
    });
    const site = await eventually('Site temp to be Ready', async () => {
      const s = await fx.sites.get('temp');
      return s?.status?.conditions?.[0]?.status === 'True' ? s : undefined;
    });
    await databases.create({
      metadata: { name: 'temp-db' },
      spec: { siteRef: { name: 'temp' }, path: 'temp.sqlite' } as SqliteDatabaseSpec,
    });
    const resource = await waitReady('temp-db');
    const root = replicaKeyRoot(DEFAULT_REPLICA_SETTINGS.prefix, {
      id: resource.status!.databaseId!,
      siteId: site.status!.siteId!,
      path: 'temp.sqlite',
    });
    await replicas().put(`${root}g0/ltx/0/x.ltx`, Buffer.from('ltx'));

    await fx.sites.delete('temp');
    await eventually('the Site to be gone', async () => !(await fx.sites.get('temp')));
    expect(await databases.get('temp-db')).toBeUndefined();
    expect(await databaseRow(resource.status!.databaseId!)).toBeUndefined();
    expect(await keysUnder(root)).toEqual([]);
  });
});

describe('a database created through the API', () => {
  it('gets its resource when the API answers, which the controller links without a token', async () => {
    const res = await install('data/api.sqlite');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { tokenId: number };
    const found = (await databases.list()).find((r) => r.spec.path === 'data/api.sqlite');
    expect(found?.metadata.name).toBe('shop-data-api-sqlite');
    expect(found?.spec).toEqual({
      siteRef: { name: 'shop' },
      path: 'data/api.sqlite',
      replication: { enabled: true },
      deletionPolicy: 'Delete',
    });
    const [row] = await rows<{ database_id: number }>(
      sql`select database_id from sqlite_tokens where id = ${body.tokenId}`,
    );
    const labelled = await databases.list(
      `${SITE_LABEL}=shop,${SQLITE_DATABASE_ID_LABEL}=${row?.database_id}`,
    );
    expect(labelled.map((r) => r.metadata.name)).toEqual(['shop-data-api-sqlite']);
    const linked = await waitReady('shop-data-api-sqlite');
    expect(linked.status?.databaseId).toBe(row?.database_id);
    // The API's caller holds the token: the controller minted none.
    expect(linked.status?.tokenId).toBeUndefined();
    expect(await secretToken('sqldb-shop-data-api-sqlite-token')).toBeUndefined();
    // A second install for the same path adds a token, not a resource.
    expect((await install('data/api.sqlite')).status).toBe(200);
    expect((await databases.list()).filter((r) => r.spec.path === 'data/api.sqlite')).toHaveLength(1);
  });

  it('one whose resource apply failed gets it from the resync', async () => {
    // The fixture's own server is not in cluster mode: its installs create no resource.
    const res = await fx.hostplane.request('/api/v1/sqlite/auth/install', {
      method: 'POST',
      headers: { 'x-api-key': apiKey },
      json: { path: 'later.sqlite', name: 'later', permissions: 'read', requireUserAuth: false },
    });
    expect(res.status).toBe(200);
    const resource = await waitReady('shop-later-sqlite');
    expect(resource.metadata.annotations?.[SQLITE_DATABASE_ID_ANNOTATION]).toBe(
      String(resource.status?.databaseId),
    );
  });

  it('a database deleted by other means takes its resource with it, never recreated', async () => {
    const resource = await waitReady('shop-later-sqlite');
    await fx.hostplane.services.store.db.execute(
      sql`delete from sqlite_databases where id = ${resource.status!.databaseId!}`,
    );
    await controller.manager.nextResync();
    await waitGone('shop-later-sqlite');
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    expect(await databases.get('shop-later-sqlite')).toBeUndefined();
    expect(await countOf(sql`select count(*) as n from sqlite_databases where path = 'later.sqlite'`)).toBe(
      0,
    );
  });
});

describe('refusals', () => {
  it('a SqliteDatabase naming an unknown Site is not Ready, with a reason, and creates nothing', async () => {
    await databases.create({
      metadata: { name: 'orphan' },
      spec: { siteRef: { name: 'nowhere' }, path: 'orphan.sqlite' } as SqliteDatabaseSpec,
    });
    const orphan = await eventually('the refusal', async () => {
      const r = await databases.get('orphan');
      return r?.status?.conditions?.[0]?.reason === 'SiteNotFound' ? r : undefined;
    });
    expect(orphan.status?.conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      observedGeneration: orphan.metadata.generation,
    });
    expect(orphan.status?.databaseId).toBeUndefined();
    expect(await countOf(sql`select count(*) as n from sqlite_databases where path = 'orphan.sqlite'`)).toBe(
      0,
    );
    await eventually('the Warning event', async () =>
      (await eventsOf('orphan')).some((e) => e.type === 'Warning' && e.reason === 'SiteNotFound'),
    );
    await databases.delete('orphan');
    await waitGone('orphan');
  });

  it('a cap above the plan’s is not Ready (CapAbovePlan)', async () => {
    await apply('greedy', { path: 'greedy.sqlite', maxUsers: 1_000_000 });
    const greedy = await eventually('the refusal', async () => {
      const r = await databases.get('greedy');
      return r?.status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'CapAbovePlan'
        ? r
        : undefined;
    });
    expect(greedy.status?.maxUsers).toBe(2500);
    await databases.delete('greedy');
    await waitGone('greedy');
  });
});

describe('a database whose shard is lost', () => {
  /** The database behind `path`, placed on a shard that has been silent for an hour. */
  async function onLostShard(path: string, fields: ReturnType<typeof sql>) {
    expect((await install(path)).status).toBe(200);
    const name = `shop-${path.replace(/[^a-z0-9]/g, '-')}`;
    const resource = await waitReady(name);
    const id = resource.status!.databaseId!;
    await fx.hostplane.services.store.db.execute(
      sql`insert into sqlite_shards (name, url, heartbeat_at) values ('gone-shard', 'http://127.0.0.1:1', now() - interval '1 hour') on conflict (name) do nothing`,
    );
    await fx.hostplane.services.store.db.execute(
      sql`update sqlite_databases set shard = 'gone-shard', ${fields} where id = ${id}`,
    );
    return { name, id };
  }
  const placed = (r: SqliteDatabaseResource | undefined) =>
    r?.status?.conditions?.find((c) => c.type === 'Placed');

  it('shows the failover: status.shard, lastMove, Placed=FailedOver and a FailedOver Event from shard A to B', async () => {
    const { name, id } = await onLostShard('lost/one.sqlite', sql`replication_state = 'pending'`);
    // The live shards' own failover rounds move it within a second or so; one here races them.
    await failOverLostShards(fx.hostplane.services.store.db, { afterMs: 20_000, maxDatabases: 500 });
    const moved = await eventually('the move in the status', async () => {
      const r = await databases.get(name);
      return r?.status?.lastMove && placed(r)?.reason === 'FailedOver' ? r : undefined;
    });
    const to = moved.status!.shard!;
    expect(to).not.toBe('gone-shard');
    expect(moved.status!.lastMove).toEqual({
      from: 'gone-shard',
      to,
      reason: 'failover',
      at: expect.any(String),
    });
    expect(placed(moved)).toMatchObject({
      status: 'True',
      message: expect.stringContaining('moved from gone-shard'),
    });
    expect(ready(moved)).toBeDefined();
    const events = await eventually('the FailedOver Event', async () => {
      const list = (await eventsOf(name)) as { reason?: string; type?: string; message?: string }[];
      return list.some((e) => e.reason === 'FailedOver') ? list : undefined;
    });
    expect(events.find((e) => e.reason === 'FailedOver')).toMatchObject({
      type: 'Warning',
      message: `database ${id} failed over from shard gone-shard to ${to}: gone-shard was lost; ${to} restores it from its replica`,
    });
  });

  it('one that cannot move (no replica) is not Ready, with Placed=False and a FailoverBlocked Event', async () => {
    const { name } = await onLostShard('lost/two.sqlite', sql`replication_enabled = false`);
    await failOverLostShards(fx.hostplane.services.store.db, { afterMs: 20_000, maxDatabases: 500 });
    const blocked = await eventually('FailoverBlocked in the status', async () => {
      const r = await databases.get(name);
      return placed(r)?.reason === 'NoReplica' ? r : undefined;
    });
    expect(blocked.status!.shard).toBe('gone-shard');
    expect(blocked.status!.conditions!.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'FailoverBlocked',
    });
    await eventually('the FailoverBlocked Event', async () =>
      (await eventsOf(name)).some((e) => e.reason === 'FailoverBlocked' && e.type === 'Warning'),
    );
  });
});
