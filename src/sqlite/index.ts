// The SQLite domain's public face: per-site databases over HTTP, their scoped tokens and
// end-user pools (control plane in PostgreSQL), and the guarded engine the shards run.
export {
  sqliteDatabases,
  sqliteLeases,
  sqliteSessions,
  sqliteShards,
  sqliteTokens,
  sqliteUsers,
} from './tables.js';
