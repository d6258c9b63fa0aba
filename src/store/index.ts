// The control-plane database's public face: opening it (PostgreSQL or PGlite), and its schema
// migrations as an explicit, locked step (see migrate.ts and schema-gate.ts).
export { CHANNELS } from './channels.js';
export {
  openStore,
  type Db,
  type Executor,
  type OpenStoreOptions,
  type Store,
  type StoreSession,
  type Tx,
} from './db.js';
export {
  journal,
  migrate,
  MIGRATION_LOCK_KEY,
  migrationsFolder,
  schemaVersion,
  waitForSchema,
  type MigrateOptions,
  type MigrateResult,
  type SchemaVersion,
  type WaitOptions,
} from './migrate.js';
export { PGLITE_VACUUM_EVERY_MS, PGLITE_VACUUM_FIRST_AFTER_MS } from './pglite-maintenance.js';
export { openStoreForRole, type OpenForRoleOptions, type SchemaPolicy } from './schema-gate.js';
export { StandInProbes, untilReachable } from './start-up-wait.js';
