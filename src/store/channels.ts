/**
 * Every PostgreSQL NOTIFY channel of the service. Each channel a process listens to holds one
 * pooled connection of its own (see db.ts), so the events of one concern share a channel and name
 * their kind in the payload. The payloads are written and read beside their senders.
 */
export const CHANNELS = {
  /** Site events (platform/site-events.ts): content changed, routes changed, site removed. */
  site: 'hostplane_site_changed',
  /** The SQLite token grants of a site changed, e.g. a token was revoked (payload: the site id). */
  sqliteGrants: 'hostplane_sqlite_grants',
  /**
   * The sessions or users of a SQLite database changed — a logout, a password change or reset, a
   * user changed or deleted (payload: the database id).
   */
  sqliteSessions: 'hostplane_sqlite_sessions',
  /**
   * A SQLite database was placed on another shard, e.g. a drain, or a failover found it cannot
   * move it (payload: the database id): its owner lets it go at once instead of at its next lease
   * round, and its SqliteDatabase resource's status follows at once.
   */
  sqlitePlacement: 'hostplane_sqlite_placement',
} as const;
