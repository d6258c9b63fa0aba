// SqliteDatabase resources applied with kubectl: creation (a token in a Secret, the status, the
// database row), spec changes followed by observedGeneration, immutable fields, a second resource
// for a claimed path, deletion with Delete and with Retain, caps below the plan's, and refusals
// (an unknown Site, a cap above the plan's). Shards, Sites and the API are in
// sqlitedb-shards-sites-api.test.ts.
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  SITE_LABEL,
  SQLITE_DATABASE_FINALIZER,
  SQLITE_DATABASE_ID_ANNOTATION,
  SQLITE_DATABASE_ID_LABEL,
  apiStatus,
  type SqliteDatabaseResource,
  type SqliteDatabaseSpec,
} from '../../../src/kube/index.js';
import { hashSecret } from '../../../src/platform/index.js';
import { eventually } from '../../support/kube/cluster.js';
import {
  apiKey,
  apply,
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
  siteId,
  useSqliteDbCluster,
  waitGone,
  waitReady,
} from './sqlitedb-support.js';

useSqliteDbCluster();

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
