/** The roles of the one binary (`hostplane serve --role`), as DESIGN.md "Processes" lists them. */
export const ROLES = ['all', 'api', 'edge', 'controller'] as const;
export type Role = (typeof ROLES)[number];

/** The roles served by createApp; the `controller` role has its own small app (createControllerApp). */
export type AppRole = Exclude<Role, 'controller'>;
