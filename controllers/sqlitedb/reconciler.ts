import { SQLITE_DATABASE_FINALIZER, sqliteDatabaseSpecSchema } from '../../src/kube/index.js';
import type { Reconciler } from '../runtime/controller.js';
import { ResourceReconciler } from '../runtime/reconcile.js';
import type { SqliteDatabaseContext } from './context.js';
import { cleanUpDatabase } from './deletion.js';
import { orchestrateDatabase } from './orchestration.js';

/**
 * The SqliteDatabase's parts of the reconcile pass (runtime/reconcile.ts runs them): a live one
 * is linked to its database (created when the resource came first) and reports it
 * (orchestration.ts); a deleted one removes the database and, by policy, its replica (deletion.ts).
 */
export function sqliteDatabaseReconciler(context: SqliteDatabaseContext): Reconciler {
  return new ResourceReconciler({
    cache: context.databases,
    client: context.clients.sqliteDatabases,
    events: context.events,
    finalizer: SQLITE_DATABASE_FINALIZER,
    specSchema: sqliteDatabaseSpecSchema,
    cleanUp: (resource) => cleanUpDatabase(context, resource),
    orchestrate: (resource, spec) => orchestrateDatabase(context, resource, spec),
  });
}
