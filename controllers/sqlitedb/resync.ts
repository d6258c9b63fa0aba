import {
  createSqliteDatabaseResource,
  SQLITE_DATABASE_ID_ANNOTATION,
  type ResourceClient,
  type SiteResource,
  type SqliteDatabaseResource,
} from '../../src/kube/index.js';
import type { SqliteDatabases } from '../../src/sqlite/index.js';
import { databasePath } from './database-link.js';

/**
 * The database → cluster half of the two-way sync: every database that no live SqliteDatabase
 * names (by its id annotation, or by its site and path: a resource being linked) gets one, when
 * its site has a Site resource (a detached site has none). The database is read before the
 * caches, so a resource created meanwhile is already cached; a database deleted meanwhile is
 * looked up once more right before its resource would be created. Returns how many it created.
 */
export async function createMissingSqliteDatabaseResources(
  sqlite: SqliteDatabases,
  resources: ResourceClient<SqliteDatabaseResource>,
  cached: { databases: () => readonly SqliteDatabaseResource[]; sites: () => readonly SiteResource[] },
  stopped: () => boolean = () => false,
): Promise<number> {
  const rows = await sqlite.list();
  const existing = cached.databases();
  const annotatedIds = new Set(existing.map((r) => r.metadata.annotations?.[SQLITE_DATABASE_ID_ANNOTATION]));
  const named = new Set(existing.map((r) => `${r.spec.siteRef?.name}\0${databasePath(r.spec.path ?? '')}`));
  const siteResourceOf = new Map<number, SiteResource>();
  for (const site of cached.sites()) {
    const siteId = site.status?.siteId;
    if (siteId !== undefined && !site.metadata.deletionTimestamp) siteResourceOf.set(siteId, site);
  }
  let created = 0;
  for (const row of rows) {
    if (stopped()) break;
    if (annotatedIds.has(String(row.id))) continue;
    const site = siteResourceOf.get(row.siteId);
    if (!site || named.has(`${site.metadata.name}\0${row.path}`)) continue;
    const current = await sqlite.byId(row.id);
    if (!current) continue;
    const result = await createSqliteDatabaseResource(resources, {
      databaseId: current.id,
      siteResourceName: site.metadata.name,
      siteSlug: site.spec.slug,
      path: current.path,
      replicationEnabled: current.replicationEnabled,
    });
    if (result.result === 'created') created++;
  }
  return created;
}
