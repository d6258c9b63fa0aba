// SqliteDatabases and what lies beyond their resource: deleting one a shard holds (a second replica
// sweep after the lease), a Site deleted with deletionPolicy Delete taking its databases, databases
// created through the API (and deleted by other means), and failover from a lost shard shown in the
// status and Events. Resources applied with kubectl alone are in sqlitedb-kubectl.test.ts.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  SITE_LABEL,
  SQLITE_DATABASE_ID_ANNOTATION,
  SQLITE_DATABASE_ID_LABEL,
  REPLICA_SWEEP_ANNOTATION,
  type SiteResource,
  type SqliteDatabaseResource,
  type SqliteDatabaseSpec,
} from '../../../src/kube/index.js';
import { DEFAULT_REPLICA_SETTINGS, failOverLostShards } from '../../../src/sqlite/index.js';
import { replicaKeyRoot } from '../../../src/sqlite/replication/replica-path.js';
import { eventually } from '../../support/kube/cluster.js';
import {
  api,
  apiKey,
  apply,
  controller,
  countOf,
  databaseRow,
  databases,
  eventsOf,
  fakeReplica,
  fx,
  keysUnder,
  ready,
  replicaRoot,
  replicas,
  rows,
  secretToken,
  useSqliteDbCluster,
  waitGone,
  waitReady,
} from './sqlitedb-support.js';

useSqliteDbCluster();

const install = (path: string) =>
  api.request('/api/v1/sqlite/auth/install', {
    method: 'POST',
    headers: { 'x-api-key': apiKey },
    json: { path, name: 'app', permissions: 'readwrite', requireUserAuth: false },
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
