import type Database from 'better-sqlite3';
import type { BindValue } from './encoding.js';

type Stmt = Database.Statement<BindValue[]>;

/**
 * The engine's own statements, prepared once per connection in engine mode: the guard's mode
 * switches (through `_hp_guard` with the connection's secret), the transaction, the version
 * counter, the size measurement and the reserved-name count.
 */
export type EngineStatements = Record<
  | 'tenant'
  | 'engine'
  | 'status'
  | 'maintenance'
  | 'begin'
  | 'commit'
  | 'rollback'
  | 'bump'
  | 'bumpBy'
  | 'savepoint'
  | 'release'
  | 'rollbackTo'
  | 'pages'
  | 'free'
  | 'schemaVersion'
  | 'reservedCount',
  Stmt
>;

export function prepareEngineStatements(db: Database.Database): EngineStatements {
  const prep = (sql: string) => db.prepare<BindValue[]>(sql);
  return {
    tenant: prep("SELECT _hp_guard(?, 'tenant', ?, ?)"),
    engine: prep("SELECT _hp_guard(?, 'engine')"),
    status: prep("SELECT _hp_guard(?, 'status')").pluck(),
    maintenance: prep("SELECT _hp_guard(?, 'maintenance', ?)"),
    begin: prep('BEGIN IMMEDIATE'),
    commit: prep('COMMIT'),
    rollback: prep('ROLLBACK'),
    bump: prep('UPDATE _meta SET version = version + 1 WHERE id = 1 RETURNING version').pluck(),
    bumpBy: prep('UPDATE _meta SET version = version + ? WHERE id = 1 RETURNING version').pluck(),
    // One call of a group commit (the guard refuses SAVEPOINT to tenant SQL: the name is ours).
    savepoint: prep('SAVEPOINT _hp_call'),
    release: prep('RELEASE _hp_call'),
    rollbackTo: prep('ROLLBACK TO _hp_call'),
    pages: prep('PRAGMA page_count').pluck(),
    free: prep('PRAGMA freelist_count').pluck(),
    schemaVersion: prep('PRAGMA schema_version').pluck(),
    reservedCount: prep(
      "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_hp\\_%' ESCAPE '\\' OR name LIKE '\\_litestream\\_%' ESCAPE '\\' OR lower(name) = '_meta'",
    ).pluck(),
  };
}
