import type { EngineStatements } from './engine-statements.js';
import { SqliteEngineError } from './errors.js';

/**
 * The objects with reserved names (`_meta`, `_hp_*`, `_litestream_*`) a database holds, all the
 * platform's, checked after each write that changed the schema: the authorizer cannot see the
 * new name of ALTER TABLE … RENAME TO, so one more than the platform made is refused.
 */
export class ReservedNames {
  // Plain fields, no parameter properties: the worker runs this file under Node's type stripping.
  private readonly internal: Pick<EngineStatements, 'schemaVersion' | 'reservedCount'>;
  private schemaVersion: number;
  private count: number;

  constructor(internal: Pick<EngineStatements, 'schemaVersion' | 'reservedCount'>) {
    this.internal = internal;
    this.schemaVersion = this.readVersion();
    this.count = this.readCount();
  }

  /**
   * Before a write's tenant statements, under its write lock (BEGIN IMMEDIATE): another connection
   * may have changed the schema since the last write — Litestream creates `_litestream_seq` and
   * `_litestream_lock` when it starts replicating — and what is there now is the platform's.
   * True when the schema changed (cached statements must be prepared anew).
   */
  adoptOutsideChanges(): boolean {
    const version = this.readVersion();
    if (version === this.schemaVersion) return false;
    this.count = this.readCount();
    this.schemaVersion = version;
    return true;
  }

  /**
   * After a write's tenant statements, in its transaction: refuses one that added a reserved name.
   * True when the schema changed (cached statements must be prepared anew: their columns, and so
   * their caps per value, may have changed).
   */
  checkAfterWrite(): boolean {
    const version = this.readVersion();
    if (version === this.schemaVersion) return false;
    if (this.readCount() !== this.count) {
      throw new SqliteEngineError({
        kind: 'denied',
        message: 'not authorized: names starting with _hp_ or _litestream_, and _meta, are reserved',
        sqliteCode: 'SQLITE_AUTH',
        reason: 'reserved name',
      });
    }
    this.schemaVersion = version;
    return true;
  }

  private readVersion(): number {
    return Number(this.internal.schemaVersion.get());
  }

  private readCount(): number {
    return Number(this.internal.reservedCount.get());
  }
}
