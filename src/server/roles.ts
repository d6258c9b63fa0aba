/** The roles of the one binary (`hostplane serve --role`), as DESIGN.md "Processes" lists them. */
export const ROLES = ['all', 'api', 'edge', 'sqlite', 'controller'] as const;
export type Role = (typeof ROLES)[number];

/** The roles served by createApp; the `controller` role has its own small app (createControllerApp). */
export type AppRole = Exclude<Role, 'controller'>;

/**
 * The roles that are SQLite shards (own database files, hold leases): `all` standalone, `sqlite`
 * in the cluster. The `api` role is not one: it forwards every call that needs a file to a shard.
 */
export const isShardRole = (role: AppRole): boolean => role === 'all' || role === 'sqlite';

/** The roles that answer the public API and run its background work (sweeps, mail, admin socket). */
export const isApiRole = (role: AppRole): boolean => role === 'all' || role === 'api';

/** The roles that serve sites by Host (and so keep the edge's caches in step with deploy switches). */
export const isSiteRole = (role: AppRole): boolean => role === 'all' || role === 'edge';
