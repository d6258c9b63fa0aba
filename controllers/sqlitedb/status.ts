import type {
  Condition,
  SqliteDatabaseResource,
  SqliteDatabaseSpec,
  SqliteDatabaseStatus,
} from '../../src/kube/index.js';
import type { SqliteDatabaseRow } from '../../src/sqlite/index.js';
import { condition, READY, writeStatusIfChanged } from '../runtime/reconcile-helpers.js';
import type { SqliteDatabaseContext } from './context.js';
import type { TokenRef } from './database-link.js';

export const REPLICATING = 'Replicating';
export const RESTORING = 'Restoring';
export const PLACED = 'Placed';

/** Size and user caps (null: none). */
export interface Caps {
  maxSizeBytes: number | null;
  maxUsers: number | null;
}

/**
 * Writes the status of a linked database (when it changed): where it lives and what its owner
 * last reported (size, version, replication, restore window), its pool's size, the caps in
 * effect, and the token minted for it. Returns the reason it is not Ready, if any.
 */
export async function writeLinkedStatus(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
  linked: {
    database: SqliteDatabaseRow;
    token?: TokenRef;
    /** The caps in effect. */
    caps: Caps;
    /** The spec's caps above the plan's (capsAbovePlan). */
    capsAbovePlan: string[];
  },
): Promise<string | undefined> {
  const { database, token, caps } = linked;
  const users = await context.sqlite.userCount(database.id);
  const ready = readyCondition(resource, database, linked.capsAbovePlan);
  const iso = (d: Date | null) => (d ? d.toISOString().replace(/\.\d+Z$/, 'Z') : undefined);
  const status: Omit<SqliteDatabaseStatus, 'observedGeneration'> = {
    conditions: [
      ready,
      replicatingCondition(resource, database),
      restoringCondition(resource, database),
      placedCondition(resource, database),
    ],
    databaseId: database.id,
    siteId: database.siteId,
    shard: database.shard ?? undefined,
    sizeBytes: database.sizeBytes,
    version: database.version,
    users,
    maxSizeBytes: caps.maxSizeBytes ?? undefined,
    maxUsers: caps.maxUsers ?? undefined,
    replicationState: database.replicationState,
    lastReplicatedAt: iso(database.replicatedAt),
    retentionHours: database.replicationEnabled ? context.sqlite.replicaSettings.retentionHours : undefined,
    restoreWindow: database.replicatedAt
      ? {
          earliest: iso(database.restorableFrom ?? database.replicatedAt),
          latest: iso(database.replicatedAt),
        }
      : undefined,
    lastMove: lastMoveOf(database),
    tokenId: token?.tokenId,
    tokenSecretName: token?.secretName,
  };
  await writeStatusIfChanged(context.clients.sqliteDatabases, resource, status);
  return ready.status === 'True' ? undefined : ready.reason;
}

/** Ready: served, and the spec's caps within the plan's. */
function readyCondition(
  resource: SqliteDatabaseResource,
  database: SqliteDatabaseRow,
  above: string[],
): Condition {
  const notReady = (reason: string, message: string) => condition(resource, READY, 'False', reason, message);
  if (database.replicationState === 'restore_failed') {
    return notReady(
      'RestoreFailed',
      'its replica exists but could not be restored: the database is not served',
    );
  }
  if (database.replicationState === 'register_failed') {
    return notReady(
      'RegistrationFailed',
      'Litestream refused the database: it is not served (no write is acknowledged unreplicated)',
    );
  }
  if (database.failoverBlocked) {
    return notReady(
      'FailoverBlocked',
      `its shard ${database.shard} is lost and ${blockedBecause(database.failoverBlocked)}: the database is not served`,
    );
  }
  if (above.length > 0) return notReady('CapAbovePlan', `${above.join('; ')}: the plan's caps apply`);
  return condition(resource, READY, 'True', 'Reconciled', `database ${database.id} exists and is served`);
}

/** The spec caps that exceed the plan's (`plan`): a cap can only be lowered. */
export function capsAbovePlan(spec: SqliteDatabaseSpec, plan: Caps): string[] {
  const above: string[] = [];
  if (spec.maxSizeBytes !== undefined && plan.maxSizeBytes !== null && spec.maxSizeBytes > plan.maxSizeBytes)
    above.push(`maxSizeBytes ${spec.maxSizeBytes} exceeds the plan's ${plan.maxSizeBytes}`);
  if (spec.maxUsers !== undefined && plan.maxUsers !== null && spec.maxUsers > plan.maxUsers)
    above.push(`maxUsers ${spec.maxUsers} exceeds the plan's ${plan.maxUsers}`);
  return above;
}

function replicatingCondition(resource: SqliteDatabaseResource, database: SqliteDatabaseRow): Condition {
  const set = (status: Condition['status'], reason: string, message: string) =>
    condition(resource, REPLICATING, status, reason, message);
  if (!database.replicationEnabled) return set('False', 'Disabled', 'replication is off in the spec');
  switch (database.replicationState) {
    case 'replicating':
      return set('True', 'Replicating', 'Litestream replicates the database to S3');
    case 'off':
      return set(
        'False',
        'Unavailable',
        'its shard has no S3 or no litestream binary: the file is the only copy',
      );
    case 'restoring':
      return set('False', 'Restoring', 'the database is being restored from its replica');
    case 'restore_failed':
      return set('False', 'RestoreFailed', 'the replica could not be restored');
    case 'register_failed':
      return set('False', 'RegistrationFailed', 'Litestream refused the database');
    default:
      return set('Unknown', 'Pending', 'no shard has opened the database yet');
  }
}

function restoringCondition(resource: SqliteDatabaseResource, database: SqliteDatabaseRow): Condition {
  const set = (status: Condition['status'], reason: string, message: string) =>
    condition(resource, RESTORING, status, reason, message);
  if (database.replicationState === 'restoring')
    return set('True', 'Restoring', 'its shard restores it from S3 before serving it');
  if (database.replicationState === 'restore_failed')
    return set('False', 'RestoreFailed', 'its replica exists but could not be restored: not served');
  return set('False', 'NotRestoring', 'no restore is under way');
}

const iso = (d: Date) => d.toISOString().replace(/\.\d+Z$/, 'Z');

/** The last move to another shard, as the status reports it (undefined: it never moved). */
export function lastMoveOf(database: SqliteDatabaseRow): SqliteDatabaseStatus['lastMove'] {
  if (!database.movedFrom || !database.movedAt || !database.moveReason || !database.shard) return undefined;
  return {
    from: database.movedFrom,
    to: database.shard,
    reason: database.moveReason,
    at: iso(database.movedAt),
  };
}

const blockedBecause = (reason: NonNullable<SqliteDatabaseRow['failoverBlocked']>) =>
  reason === 'no_capacity'
    ? 'no live shard has room for it (HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD)'
    : 'it has no replica to restore elsewhere (its only copy is on that shard)';

/** Placed: where the database lives and how it got there; False while a failover cannot move it. */
function placedCondition(resource: SqliteDatabaseResource, database: SqliteDatabaseRow): Condition {
  const set = (status: Condition['status'], reason: string, message: string) =>
    condition(resource, PLACED, status, reason, message);
  if (database.failoverBlocked)
    return set(
      'False',
      database.failoverBlocked === 'no_capacity' ? 'NoCapacity' : 'NoReplica',
      `its shard ${database.shard} is lost and ${blockedBecause(database.failoverBlocked)}`,
    );
  if (!database.shard) return set('Unknown', 'NotPlaced', 'no shard has been chosen yet (at its first call)');
  const move = lastMoveOf(database);
  if (!move) return set('True', 'Placed', `on shard ${database.shard}`);
  const reason = { failover: 'FailedOver', drain: 'Drained', pin: 'Pinned' }[move.reason];
  const why =
    move.reason === 'failover' ? ` (${move.from} was lost; restored from its replica)` : ` (${move.reason})`;
  return set('True', reason, `on shard ${move.to}, moved from ${move.from} at ${move.at}${why}`);
}
