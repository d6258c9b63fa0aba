import { z } from 'zod';
import { isNotFound, REPLICA_SWEEP_ANNOTATION, type SqliteDatabaseResource } from '../../src/kube/index.js';
import type { Cleanup } from '../runtime/reconcile.js';
import { tokenSecretNameFor, type SqliteDatabaseContext } from './context.js';
import { annotatedDatabaseId, controllingResource, databasePath, readTokenSecret } from './database-link.js';

/** The second sweep of a replica a shard may still have been writing to (REPLICA_SWEEP_ANNOTATION). */
const sweepSchema = z.object({ after: z.iso.datetime(), id: z.int(), siteId: z.int(), path: z.string() });

/**
 * Behind the finalizer of a deleted SqliteDatabase: the database it controls goes — file entry,
 * row, and with the row its tokens, users, sessions and lease (the owning shard, losing the lease,
 * lets the file go) — and with `Delete` its replica in S3 (every lineage); `Retain` keeps the
 * replica. A shard may still be replicating the database until its lease runs out, so a replica
 * deleted under a held lease is swept once more after it. Then the token Secret goes (the token
 * went with the row). A refused resource (another controls the path) owns nothing.
 */
export async function cleanUpDatabase(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
): Promise<Cleanup<SqliteDatabaseResource>> {
  const { sqlite, events } = context;
  const sweep = pendingSweep(resource);
  if (sweep) {
    const waitMs = Date.parse(sweep.after) - Date.now();
    if (waitMs > 0) return { requeueAfterMs: waitMs };
    await removeReplicaOrWarn(context, resource, sweep);
    await deleteTokenSecret(context, resource);
    return { release: resource };
  }

  const keepReplica = resource.spec.deletionPolicy === 'Retain';
  const owned = await ownedDatabase(context, resource);
  if (owned && 'databaseId' in owned) {
    const removed = await sqlite.removeDatabase(owned.databaseId, { keepReplica });
    if (removed) {
      const { database } = removed;
      events.normal(
        resource,
        'Deleted',
        `removed database ${database.id} (${database.path}) with its tokens, users and sessions; ` +
          (keepReplica ? 'its replica in S3 is kept (Retain)' : 'its replica in S3 is deleted'),
      );
      if (removed.replicaError !== undefined) {
        events.warning(
          resource,
          'ReplicaDeleteFailed',
          `could not delete the replica in S3 (${messageOf(removed.replicaError)}); trying again`,
        );
      }
      if (removed.sweepReplicaAgainAt) {
        const after = removed.sweepReplicaAgainAt.toISOString();
        // Its watch event brings the pass that waits for the time it names.
        await context.clients.sqliteDatabases.patchMetadata(resource, {
          annotations: {
            [REPLICA_SWEEP_ANNOTATION]: JSON.stringify({
              after,
              id: database.id,
              siteId: database.siteId,
              path: database.path,
            }),
          },
        });
        return { requeueAfterMs: Math.max(0, Date.parse(after) - Date.now()) };
      }
    }
  } else if (owned && !keepReplica) {
    // The database was deleted by other means (its site went): its replica still goes.
    await removeReplicaOrWarn(context, resource, owned);
  }
  await deleteTokenSecret(context, resource);
  return { release: resource };
}

/**
 * What this resource controls at its deletion: its database (by the id annotation, or — when a
 * crash kept the annotation from landing — the one its token Secret opens), or, when that
 * database is already gone, where its replica is; nothing when another resource controls the path.
 */
async function ownedDatabase(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
): Promise<{ databaseId: number } | { id: number; siteId: number; path: string } | undefined> {
  const path = databasePath(resource.spec.path ?? '');
  if (path === undefined) return undefined;
  const holder = controllingResource(context, resource.spec.siteRef.name, path);
  if (holder && holder.metadata.uid !== resource.metadata.uid) return undefined;

  const annotated = annotatedDatabaseId(resource);
  if (annotated !== undefined) {
    const row = await context.sqlite.byId(annotated);
    if (row) return row.path === path ? { databaseId: row.id } : undefined;
    const siteId = resource.status?.siteId;
    return siteId !== undefined && resource.status?.databaseId === annotated
      ? { id: annotated, siteId, path }
      : undefined;
  }
  const token = await readTokenSecret(context, tokenSecretNameFor(resource.metadata.name));
  const opened = token === undefined ? undefined : await context.sqlite.tokenOf(token);
  return opened ? { databaseId: opened.databaseId } : undefined;
}

/** Deletes the replica; a failure is a Warning Event on the resource, and the pass is retried. */
async function removeReplicaOrWarn(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
  database: { id: number; siteId: number; path: string },
): Promise<void> {
  try {
    await context.sqlite.removeReplica(database);
  } catch (err) {
    context.events.warning(
      resource,
      'ReplicaDeleteFailed',
      `could not delete the replica in S3 (${messageOf(err)}); trying again`,
    );
    throw err;
  }
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

function pendingSweep(resource: SqliteDatabaseResource): z.infer<typeof sweepSchema> | undefined {
  const value = resource.metadata.annotations?.[REPLICA_SWEEP_ANNOTATION];
  if (!value) return undefined;
  try {
    const parsed = sweepSchema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

async function deleteTokenSecret(
  context: SqliteDatabaseContext,
  resource: SqliteDatabaseResource,
): Promise<void> {
  const { core, namespace } = context.clients;
  try {
    await core.deleteNamespacedSecret({ name: tokenSecretNameFor(resource.metadata.name), namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
