/**
 * Where a database's replica lives in the bucket: `<prefix>/<site id>/<path>/d<id>/g<generation>/`.
 * The site id (not its slug, which can change) and the tenant's path keep it readable to an
 * operator; the database id keeps a database created again at the same path (after a `Retain`
 * deletion) from restoring or continuing the old one's history, and lets a late sweep of the old
 * one leave the new one alone; the generation starts a new lineage at each point-in-time restore
 * and takeover, so two histories never share a replica path.
 */
export function replicaKeyPrefix(
  prefix: string,
  database: { id: number; siteId: number; path: string; replicaGeneration: number },
): string {
  return `${replicaKeyRoot(prefix, database)}g${database.replicaGeneration}`;
}

/** Every lineage of one database (what a `Delete` policy removes), with its trailing slash. */
export function replicaKeyRoot(
  prefix: string,
  database: { id: number; siteId: number; path: string },
): string {
  const base = prefix.replace(/^\/+|\/+$/g, '');
  const dbPath = database.path.replace(/^\/+/, '');
  return `${base ? `${base}/` : ''}${database.siteId}/${dbPath}/d${database.id}/`;
}
