import { isNotFound, type SqliteDatabaseResource, type SqliteDatabaseSpec } from '../../src/kube/index.js';
import type { ReconcileResult } from '../runtime/controller.js';
import { isRefusal, WAITING_RETRY_MS, type RefusedOn } from '../runtime/reconcile.js';
import type { SqliteDatabaseContext } from './context.js';
import { linkDatabase } from './database-link.js';
import { writeLinkedStatus, type Caps } from './status.js';

/**
 * A live SqliteDatabase with a valid spec: the database exists (database-link.ts: created with a
 * readwrite token when the resource came first), replication follows the spec, and the status
 * reports what the owning shard last recorded (status.ts). Placement is the shards' business: a
 * pin is applied when the database is created, never by moving it.
 */
export async function orchestrateDatabase(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
  spec: SqliteDatabaseSpec,
): Promise<ReconcileResult | RefusedOn<SqliteDatabaseResource> | void> {
  const { events, sqlite } = context;
  const linked = await linkDatabase(context, resource, spec);
  if ('staleDatabaseId' in linked) {
    // Deleted by other means (its site was deleted): finish that delete. Creating it again
    // would hand back an empty database in place of the deleted one.
    events.normal(
      resource,
      'DatabaseDeleted',
      `database ${linked.staleDatabaseId} no longer exists; deleting this resource`,
    );
    try {
      await context.clients.sqliteDatabases.delete(resource.metadata.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return;
  }
  if (isRefusal(linked)) return { ...linked, resource };
  const current = linked.resource;

  let { database } = linked;
  if (database.replicationEnabled !== spec.replication.enabled) {
    database = (await sqlite.setReplication(database.id, spec.replication.enabled)) ?? database;
    events.normal(
      current,
      spec.replication.enabled ? 'ReplicationEnabled' : 'ReplicationDisabled',
      `replication of database ${database.id} turned ${spec.replication.enabled ? 'on' : 'off'}`,
    );
  }
  if (spec.shard && database.shard && spec.shard !== database.shard) {
    events.warning(
      current,
      'ShardPinIgnored',
      `the database is placed on ${database.shard}: a pin applies when it is created; draining a shard moves databases`,
    );
  }
  const caps = await capsOf(context, database.siteId);
  const lowered = [
    ...(spec.maxSizeBytes !== undefined && (caps.maxSizeBytes ?? Infinity) > spec.maxSizeBytes
      ? ['maxSizeBytes']
      : []),
    ...(spec.maxUsers !== undefined && (caps.maxUsers ?? Infinity) > spec.maxUsers ? ['maxUsers'] : []),
  ];
  if (lowered.length > 0) {
    events.warning(
      current,
      'CapNotEnforced',
      `${lowered.join(' and ')} below the plan's cap: the plan's cap applies (see status)`,
    );
  }
  const notReady = await writeLinkedStatus(context, current, spec, { database, token: linked.token, caps });
  // A database being restored, or a cap above the plan, changes without a resource event.
  return notReady ? { requeueAfterMs: WAITING_RETRY_MS } : undefined;
}

async function capsOf(context: SqliteDatabaseContext, siteId: number): Promise<Caps> {
  const plan = (await context.platform.getUsage(siteId))?.plan;
  return { maxSizeBytes: plan?.maxSqliteBytes ?? null, maxUsers: plan?.maxSqliteUsers ?? null };
}
