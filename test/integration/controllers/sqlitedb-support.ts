// What the sqlitedb-*.test.ts files share: one cluster per file (kube-apiserver + etcd, the
// controller and the API in cluster mode under the chart's RBAC, a ready Site `shop`), the
// SqliteDatabase client, and readers of the database rows, Events, token Secrets and replica
// objects the tests check.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll } from 'vitest';
import {
  apiStatus,
  resourceClient,
  type ResourceClient,
  type SqliteDatabaseResource,
  type SqliteDatabaseSpec,
} from '../../../src/kube/index.js';
import type { RunningController } from '../../../src/server/index.js';
import { DEFAULT_REPLICA_SETTINGS } from '../../../src/sqlite/index.js';
import { replicaKeyRoot } from '../../../src/sqlite/replication/replica-path.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';
import { readySite, startWithChartRbac } from '../../support/kube/cluster-api.js';
import type { TestHostplane } from '../../support/hostplane.js';

// Set once by useSqliteDbCluster's beforeAll; importers read them as live bindings.
export let fx: ClusterFixture;
export let controller: RunningController;
/** The API in cluster mode, on the fixture's database, acting as the chart's api ServiceAccount. */
export let api: TestHostplane;
export let databases: ResourceClient<SqliteDatabaseResource>;
export let siteId: number;
export let apiKey: string;

/** Starts the calling test file's cluster before its tests and stops it after them. */
export function useSqliteDbCluster(): void {
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
}

export const ready = (r: SqliteDatabaseResource | undefined) =>
  r?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') &&
  r.status.observedGeneration === r.metadata.generation
    ? r
    : undefined;

export const waitReady = (name: string) =>
  eventually(`SqliteDatabase ${name} to be Ready`, async () => ready(await databases.get(name)));

export const waitGone = (name: string, timeoutMs?: number) =>
  eventually(`SqliteDatabase ${name} to be gone`, async () => !(await databases.get(name)), timeoutMs);

export const apply = (name: string, spec: Partial<SqliteDatabaseSpec>) =>
  databases.create({
    metadata: { name },
    spec: { siteRef: { name: 'shop' }, ...spec } as SqliteDatabaseSpec,
  });

export async function rows<T>(query: ReturnType<typeof sql>): Promise<T[]> {
  const result = (await fx.hostplane.services.store.db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}
export const countOf = async (query: ReturnType<typeof sql>) =>
  Number((await rows<{ n: string }>(query))[0]?.n ?? 0);
export const databaseRow = async (id: number) =>
  (
    await rows<{ id: number; path: string; replication_enabled: boolean; shard: string | null }>(
      sql`select id, path, replication_enabled, shard from sqlite_databases where id = ${id}`,
    )
  )[0];

export async function eventsOf(name: string): Promise<{ reason?: string; type?: string }[]> {
  const list = await fx.core.listNamespacedEvent({
    namespace: fx.namespace,
    fieldSelector: `involvedObject.name=${name},involvedObject.kind=SqliteDatabase`,
  });
  return list.items;
}

export async function secretToken(name: string): Promise<string | undefined> {
  try {
    const secret = await fx.core.readNamespacedSecret({ name, namespace: fx.namespace });
    return Buffer.from(secret.data?.token ?? '', 'base64').toString('utf8');
  } catch (err) {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  }
}

/** The replica bucket (the fixture's MinIO bucket, which the controller was given). */
export const replicas = () => fx.hostplane.services.blobs;
export const replicaRoot = (path: string, id: number) =>
  replicaKeyRoot(DEFAULT_REPLICA_SETTINGS.prefix, { id, siteId, path });
export async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of replicas().list(prefix)) keys.push(object.key);
  return keys;
}
/** Objects as Litestream lays them out (two lineages), standing in for a real replica. */
export async function fakeReplica(path: string, id: number): Promise<string[]> {
  const root = replicaRoot(path, id);
  const keys = [`${root}g0/ltx/0/0000000000000001-0000000000000001.ltx`, `${root}g1/ltx/0/snapshot.ltx`];
  for (const key of keys) await replicas().put(key, Buffer.from('ltx'));
  return keys;
}
