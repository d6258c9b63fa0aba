import { isNotFound, type SqliteDatabaseResource, type SqliteDatabaseSpec } from '../../src/kube/index.js';
import type { SqliteDatabaseRow } from '../../src/sqlite/index.js';
import type { ReconcileResult } from '../runtime/controller.js';
import { isRefusal, WAITING_RETRY_MS, type RefusedOn } from '../runtime/reconcile.js';
import type { SqliteDatabaseContext } from './context.js';
import { linkDatabase } from './database-link.js';
import { capsAbovePlan, lastMoveOf, PLACED, writeLinkedStatus } from './status.js';

/**
 * A live SqliteDatabase with a valid spec: the database exists (database-link.ts: created with a
 * readwrite token when the resource came first), replication follows the spec, and the status
 * reports what the owning shard last recorded (status.ts). The spec's caps are the database's
 * own, applied where lower than the plan's. Placement is the shards' business: a pin is applied
 * when the database is created, never by moving it.
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
    // A pin changed: the database moves (its owner syncs and lets go, the pinned shard restores it).
    const from = database.shard;
    try {
      await sqlite.move(database.id, spec.shard);
      events.normal(current, 'Moving', `database ${database.id} moves from ${from} to ${spec.shard}`);
    } catch (err) {
      events.warning(
        current,
        'MoveRefused',
        `database ${database.id} stays on ${from}: ${(err as Error).message}`,
      );
    }
  }
  reportMove(context, current, database);
  const wanted = { maxSizeBytes: spec.maxSizeBytes ?? null, maxUsers: spec.maxUsers ?? null };
  if (database.maxSizeBytes !== wanted.maxSizeBytes || database.maxUsers !== wanted.maxUsers) {
    database = (await sqlite.setCaps(database.id, wanted)) ?? database;
    events.normal(current, 'CapsChanged', `caps of database ${database.id}: ${describeCaps(wanted)}`);
  }
  const { plan, ...caps } = await sqlite.capsInEffect(database);
  const above = plan
    ? capsAbovePlan(spec, { maxSizeBytes: plan.maxSqliteBytes, maxUsers: plan.maxSqliteUsers })
    : [];
  const notReady = await writeLinkedStatus(context, current, {
    database,
    token: linked.token,
    caps,
    capsAbovePlan: above,
  });
  // A database being restored, or a cap above the plan, changes without a resource event.
  return notReady ? { requeueAfterMs: WAITING_RETRY_MS } : undefined;
}

function describeCaps(caps: { maxSizeBytes: number | null; maxUsers: number | null }): string {
  const one = (value: number | null) => (value === null ? "the plan's" : String(value));
  return `maxSizeBytes ${one(caps.maxSizeBytes)}, maxUsers ${one(caps.maxUsers)}`;
}

/**
 * An Event for a move the status does not show yet (FailedOver: its shard was lost; Moved: a
 * drain or a pin), and one when a lost shard's failover cannot move it (FailoverBlocked).
 */
function reportMove(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
  database: SqliteDatabaseRow,
): void {
  const move = lastMoveOf(database);
  const shown = resource.status?.lastMove;
  if (move && (shown?.at !== move.at || shown.to !== move.to)) {
    if (move.reason === 'failover')
      context.events.warning(
        resource,
        'FailedOver',
        `database ${database.id} failed over from shard ${move.from} to ${move.to}: ${move.from} was lost; ${move.to} restores it from its replica`,
      );
    else
      context.events.normal(
        resource,
        'Moved',
        `database ${database.id} moved from shard ${move.from} to ${move.to} (${move.reason})`,
      );
  }
  const placed = resource.status?.conditions?.find((c) => c.type === PLACED);
  if (database.failoverBlocked && placed?.status !== 'False')
    context.events.warning(
      resource,
      'FailoverBlocked',
      `database ${database.id} stays on lost shard ${database.shard}: ${
        database.failoverBlocked === 'no_capacity' ? 'no live shard has room' : 'it has no replica'
      }`,
    );
}
