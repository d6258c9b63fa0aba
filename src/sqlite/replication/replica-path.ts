/**
 * Where a database's replica lives in the bucket: `<prefix>/<site id>/<path>/g<generation>/`.
 * The site id (not its slug, which can change) and the tenant's path keep one database's replica
 * apart from every other's and readable to an operator; the generation starts a new lineage at
 * each point-in-time restore, so two histories never share a replica path.
 */
export function replicaKeyPrefix(
  prefix: string,
  database: { siteId: number; path: string; replicaGeneration: number },
): string {
  const base = prefix.replace(/^\/+|\/+$/g, '');
  const dbPath = database.path.replace(/^\/+/, '');
  return `${base ? `${base}/` : ''}${database.siteId}/${dbPath}/g${database.replicaGeneration}`;
}

/** Every lineage of one database (what a `Delete` policy removes). */
export function replicaKeyRoot(prefix: string, database: { siteId: number; path: string }): string {
  return replicaKeyPrefix(prefix, { ...database, replicaGeneration: 0 }).replace(/\/g0$/, '/');
}
