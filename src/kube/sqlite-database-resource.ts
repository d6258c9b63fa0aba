import { isConflict } from './api-client.js';
import { SITE_LABEL } from './client.js';
import type { ResourceClient } from './resource-client.js';
import type { SqliteDatabaseResource } from './resource-kinds.js';

/** Links a SqliteDatabase resource to its database in the control-plane database. */
export const SQLITE_DATABASE_ID_ANNOTATION = 'hostplane.dev/sqlite-database-id';
/** The same id as a label, so that the API finds a database's resource with a label selector. */
export const SQLITE_DATABASE_ID_LABEL = 'hostplane.dev/sqlite-database-id';
/** Held by every SqliteDatabase until the controller has removed its database (and, by policy, replica). */
export const SQLITE_DATABASE_FINALIZER = 'hostplane.dev/sqlite-database-cleanup';
/**
 * Set by the finalizer when the database it removed was held by a shard: the time after which
 * that shard can no longer be replicating it, when the replica is swept once more.
 */
export const REPLICA_SWEEP_ANNOTATION = 'hostplane.dev/replica-sweep-after';

/** What a database row says about its SqliteDatabase resource (the API and the resync write it). */
export interface SqliteDatabaseRecord {
  databaseId: number;
  /** The Site resource of the database's site: its name is the siteRef. */
  siteResourceName: string;
  siteSlug: string;
  path: string;
  replicationEnabled: boolean;
}

const MAX_NAME = 63;

/**
 * `<site slug>-<path>` with every run of characters other than [a-z0-9] turned into one '-', cut
 * to 63 characters; e.g. `shop-data-app-sqlite` for `data/app.sqlite`.
 */
export function sqliteDatabaseResourceName(siteSlug: string, path: string): string {
  const slugged = `${siteSlug}-${path}`.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return slugged.slice(0, MAX_NAME).replace(/^-+|-+$/g, '');
}

/**
 * Creates the SqliteDatabase resource of a database row, annotated and labelled with its id (so
 * the controller links rather than creates). The derived name may be taken by another
 * database's resource: then `sqldb-<id>`. Returns the name it lives under.
 */
export async function createSqliteDatabaseResource(
  resources: ResourceClient<SqliteDatabaseResource>,
  record: SqliteDatabaseRecord,
): Promise<{ name: string; result: 'created' | 'exists' }> {
  const id = String(record.databaseId);
  for (const name of [sqliteDatabaseResourceName(record.siteSlug, record.path), `sqldb-${id}`]) {
    try {
      await resources.create({
        metadata: {
          name,
          annotations: { [SQLITE_DATABASE_ID_ANNOTATION]: id },
          labels: { [SQLITE_DATABASE_ID_LABEL]: id, [SITE_LABEL]: record.siteResourceName },
        },
        spec: {
          siteRef: { name: record.siteResourceName },
          path: record.path,
          replication: { enabled: record.replicationEnabled },
          deletionPolicy: 'Delete',
        },
      });
      return { name, result: 'created' };
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
    const existing = await resources.get(name);
    if (existing?.metadata.annotations?.[SQLITE_DATABASE_ID_ANNOTATION] === id)
      return { name, result: 'exists' };
  }
  throw new Error(`no free name for the SqliteDatabase resource of database ${id}`);
}

/** The SqliteDatabase resource of a database row: found by its id label. */
export async function findSqliteDatabaseResource(
  resources: ResourceClient<SqliteDatabaseResource>,
  databaseId: number,
): Promise<SqliteDatabaseResource | undefined> {
  const [found] = await resources.list(`${SQLITE_DATABASE_ID_LABEL}=${databaseId}`);
  return found;
}
