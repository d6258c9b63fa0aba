import {
  SQLITE_DATABASE_ID_ANNOTATION,
  type SiteResource,
  type SqliteDatabaseResource,
} from '../../src/kube/index.js';
import { Controller, objectKey } from '../runtime/controller.js';
import {
  annotationsChanged,
  anyOf,
  deletionOrFinalizersChanged,
  generationChanged,
  labelsChanged,
  watchPrimary,
  when,
} from '../runtime/predicates.js';
import type { ControllerContext, ControllerRegistration } from '../runtime/setup.js';
import { sqliteDatabaseReconciler } from './reconciler.js';
import { createMissingSqliteDatabaseResources } from './resync.js';

/**
 * The SqliteDatabase updates that bring a pass: its spec, its deletion or finalizers, its
 * annotations and labels (the database-id link, the replica sweep). Not a status write.
 */
const databaseChanged = anyOf<SqliteDatabaseResource>(
  generationChanged,
  deletionOrFinalizersChanged,
  annotationsChanged,
  labelsChanged,
);

/** The Site updates that concern its databases: it was linked to a site, or its deletion began. */
const siteLinkChanged = anyOf<SiteResource>(
  (site, old) => site.status?.siteId !== old.status?.siteId,
  deletionOrFinalizersChanged,
);

/**
 * The SqliteDatabase controller: reconciles on every change but a status write and, when a Site
 * is linked, the databases naming it; every resync pass refreshes each status (size, version,
 * replication, as the owning shard last recorded them) and gives every database without a
 * resource one.
 */
export function setupSqliteDatabaseController(context: ControllerContext): ControllerRegistration {
  const { clients, informers, logger, sqlite } = context;
  const databases = informers.forKind('SqliteDatabase');
  const sites = informers.forKind('Site');
  const reconciler = sqliteDatabaseReconciler({ ...context, databases, sites });
  const controller = new Controller({ name: 'sqlitedatabase', reconciler, workers: context.workers, logger });

  watchPrimary(databases, controller, databaseChanged);
  const enqueueDatabasesOf = (site: SiteResource): void => {
    for (const database of databases.list()) {
      if (database.spec.siteRef?.name === site.metadata.name) controller.enqueue(objectKey(database));
    }
  };
  sites.on('add', enqueueDatabasesOf);
  sites.on('update', when(siteLinkChanged, enqueueDatabasesOf));
  // A refused resource (another controls its path) is looked at again when that one goes.
  databases.on('delete', (gone) => {
    for (const database of databases.list()) {
      if (database.spec.siteRef?.name === gone.spec.siteRef?.name && database.spec.path === gone.spec.path)
        controller.enqueue(objectKey(database));
    }
  });

  // A move (failover, drain), or a failover that cannot move it, changes no resource: PostgreSQL
  // tells of it, its status follows.
  const unsubscribe = context.databaseMoves?.((databaseId) => {
    const id = String(databaseId);
    for (const database of databases.list()) {
      if (database.metadata.annotations?.[SQLITE_DATABASE_ID_ANNOTATION] === id)
        controller.enqueue(objectKey(database));
    }
  });

  return {
    controller,
    primary: databases,
    stop: unsubscribe,
    async resync(stopped) {
      const created = await createMissingSqliteDatabaseResources(
        sqlite,
        clients.sqliteDatabases,
        { databases: () => databases.list(), sites: () => sites.list() },
        stopped,
      );
      if (created > 0) logger.info({ created }, 'resync created SqliteDatabase resources for databases');
    },
  };
}
