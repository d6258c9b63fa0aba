import { randomBytes } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';
import { and, eq } from 'drizzle-orm';
import { AppError } from '../../errors/index.js';
import { withSpan, type Logger } from '../../observability/index.js';
import type { Db } from '../../store/index.js';
import type { LocalShard } from '../local-shard.js';
import { restoresTotal } from '../metrics.js';
import { sqliteDatabases, type SqliteDatabaseRow } from '../tables.js';
import { readBookmark, signBookmark } from './bookmark.js';
import { LitestreamError, type RestoreWindow } from './litestream.js';
import { removeCompanions } from './opener.js';
import type { ReplicaOf } from './replicator.js';

/** A restore's target: a time in the current generation's window, or a bookmark to go back to. */
export type RestoreTarget = { timestamp: Date } | { bookmark: string };

export interface RestoreWindowAnswer {
  earliest: Date | null;
  latest: Date | null;
  retentionHours: number;
}

export interface RestoreOutcome {
  restoredTo: Date;
  version: number;
  previousBookmark: string;
  /** How long the database was unavailable (the swap under its write lock). */
  swapMs: number;
}

/** The database's own columns a restore works from. */
type DatabaseOf = Pick<
  SqliteDatabaseRow,
  'id' | 'siteId' | 'path' | 'replicaGeneration' | 'replicationEnabled'
>;

/** `litestream ltx -json` gives whole seconds: the exact times may be up to this much later. */
const LISTED_PRECISION_MS = 1000;

const windowError = (timestamp: Date, window: RestoreWindow | undefined) =>
  new AppError('SQLITE_RESTORE_WINDOW', {
    timestamp: timestamp.toISOString(),
    earliest: window ? earliestOf(window).toISOString() : null,
    latest: window ? window.latest.toISOString() : null,
  });

/**
 * The oldest snapshot, rounded up to the next listed second: a restore starts from a snapshot
 * taken before its target, and the listing truncates the snapshot's time.
 */
function earliestOf(window: RestoreWindow): Date {
  return new Date(window.earliest.getTime() + LISTED_PRECISION_MS);
}

/**
 * Point-in-time restore of a database, on the shard that owns it (Cloudflare D1's Time Travel is
 * the model): the current generation's replica restored at a time, to a temporary file (Litestream
 * checks its integrity), then swapped in under the database's write lock (LocalShard.replaceFile):
 * calls stopped and drained, a last sync, the old file let go by Litestream, the row moved to a new
 * replica generation, the file renamed into place, opened again and registered under the new
 * generation, its version set above every version clients saw. The old generation is never
 * written again, so its end is exactly the state before the restore: the answer's bookmark points
 * there, and restoring it is the undo.
 */
export class PointInTimeRestore {
  private readonly busy = new Set<number>();

  constructor(
    private readonly deps: {
      db: Db;
      shard: LocalShard;
      /** The key bookmarks are signed with (a server secret every replica shares). */
      secret: () => Promise<Buffer>;
      retentionHours: number;
      logger: Logger;
    },
  ) {}

  /** The database of `siteId` at `path`, or undefined. */
  async find(siteId: number, path: string): Promise<SqliteDatabaseRow | undefined> {
    const [row] = await this.deps.db
      .select()
      .from(sqliteDatabases)
      .where(and(eq(sqliteDatabases.siteId, siteId), eq(sqliteDatabases.path, path)));
    return row;
  }

  /** The current generation's restore window (nulls: nothing replicated yet). */
  async window(database: DatabaseOf): Promise<RestoreWindowAnswer> {
    this.mustReplicate(database);
    // An open database's WAL shipped first: `latest` then covers every acknowledged write.
    const state = await this.deps.shard.stateOf(database.id);
    if (state) await this.deps.shard.replicator.flush(state.file).catch(() => undefined);
    const window = await this.windowOf(database);
    if (window)
      await this.deps.db
        .update(sqliteDatabases)
        .set({ restorableFrom: earliestOf(window) })
        .where(eq(sqliteDatabases.id, database.id));
    return {
      earliest: window ? earliestOf(window) : null,
      latest: window?.latest ?? null,
      retentionHours: this.deps.retentionHours,
    };
  }

  /** Restores the database to `target` (see the class); one restore of a database at a time. */
  async restore(
    database: DatabaseOf,
    target: RestoreTarget,
    maxBytes: number | null,
  ): Promise<RestoreOutcome> {
    this.mustReplicate(database);
    if (this.busy.has(database.id))
      throw new AppError('CONFLICT', { message: 'A restore of this database is already under way.' });
    this.busy.add(database.id);
    const kind = 'timestamp' in target ? 'timestamp' : 'bookmark';
    try {
      const outcome = await withSpan(
        'sqlite.restore',
        { 'sqlite.database_id': database.id, 'sqlite.restore_target': kind },
        () => this.restoreNow(database, target, maxBytes),
      );
      restoresTotal.inc({ kind: 'point_in_time', outcome: 'restored' });
      this.deps.logger.info(
        {
          databaseId: database.id,
          target: kind,
          restoredTo: outcome.restoredTo,
          version: outcome.version,
          swapMs: outcome.swapMs,
        },
        'sqlite database restored to a point in time',
      );
      return outcome;
    } catch (err) {
      // A refusal (bad timestamp or bookmark, busy) is not a failed restore.
      if (!(err instanceof AppError && err.status < 500)) {
        restoresTotal.inc({ kind: 'point_in_time', outcome: 'failed' });
        this.deps.logger.error(
          { err, databaseId: database.id, target: kind },
          'sqlite point-in-time restore failed',
        );
      }
      throw err;
    } finally {
      this.busy.delete(database.id);
    }
  }

  private async restoreNow(
    database: DatabaseOf,
    target: RestoreTarget,
    maxBytes: number | null,
  ): Promise<RestoreOutcome> {
    const { shard } = this.deps;
    const generation = database.replicaGeneration;
    // Open here (restored if its file is missing) and its WAL shipped: the window then holds
    // every write acknowledged before this call.
    await shard.handle({ id: database.id }, maxBytes);
    const state = await shard.stateOf(database.id);
    if (!state) throw busy();
    await shard.replicator.flush(state.file).catch((err: unknown) => {
      throw Object.assign(new AppError('SQLITE_RESTORE_FAILED', { retryAfterSeconds: 10 }), { cause: err });
    });
    const temp = `${state.file}.pitr-${randomBytes(4).toString('hex')}`;
    try {
      // The download first, while the database is still served: the swap then takes only as long
      // as a sync, a rename and an open.
      const restoredTo =
        'timestamp' in target
          ? await this.downloadAt(database, target.timestamp, temp)
          : await this.downloadBookmarked(database, target.bookmark, temp);
      const secret = await this.deps.secret();
      let version = 0;
      const swapStarted = performance.now();
      const previousBookmark = await shard.replaceFile(
        database.id,
        maxBytes,
        async (file, versionBefore) => {
          version = versionBefore + 1;
          // Moved to a new generation before the file changes: a failure from here on reopens
          // whatever file is in place under the new one, and two histories never share a replica.
          const moved = await this.deps.db
            .update(sqliteDatabases)
            .set({
              replicaGeneration: generation + 1,
              replicatedAt: null,
              restorableFrom: null,
              replicationState: 'pending',
            })
            .where(
              and(eq(sqliteDatabases.id, database.id), eq(sqliteDatabases.replicaGeneration, generation)),
            )
            .returning({ id: sqliteDatabases.id });
          if (moved.length === 0) throw busy();
          const bookmark = signBookmark({ databaseId: database.id, generation, at: new Date() }, secret);
          await removeCompanions(file);
          await rename(temp, file);
          return bookmark;
        },
        async (db, file) => {
          await db.setVersion(version);
          await shard.replicator.flush(file);
          await this.deps.db
            .update(sqliteDatabases)
            .set({ version, replicatedAt: new Date() })
            .where(eq(sqliteDatabases.id, database.id));
        },
      );
      return { restoredTo, version, previousBookmark, swapMs: Math.round(performance.now() - swapStarted) };
    } finally {
      await rm(temp, { force: true });
    }
  }

  /** The current generation at `timestamp` into `temp`; what it restored to. */
  private async downloadAt(database: DatabaseOf, timestamp: Date, temp: string): Promise<Date> {
    const window = await this.windowOf(database);
    if (!window || timestamp < earliestOf(window) || timestamp.getTime() > Date.now())
      throw windowError(timestamp, window);
    const replica = this.replicaOf(database, database.replicaGeneration);
    // Litestream refuses a time after its last change ("timestamp does not exist"), which the
    // listing gives to the second: past it, nothing changed since, and the whole replica is that state.
    const past = timestamp.getTime() >= window.latest.getTime() + LISTED_PRECISION_MS;
    let restored: boolean;
    try {
      restored = await this.download(replica, temp, past ? undefined : timestamp);
    } catch (err) {
      if (!(err instanceof LitestreamError)) throw err;
      if (timestamp < window.latest) throw windowError(timestamp, window);
      await rm(temp, { force: true });
      restored = await this.download(replica, temp, undefined);
    }
    if (!restored) throw windowError(timestamp, window);
    return timestamp;
  }

  /** The whole of the bookmarked (older) generation into `temp`; the time it was current. */
  private async downloadBookmarked(database: DatabaseOf, text: string, temp: string): Promise<Date> {
    const bookmark = readBookmark(text, await this.deps.secret());
    if (bookmark.databaseId !== database.id || bookmark.generation >= database.replicaGeneration)
      throw new AppError('SQLITE_BOOKMARK_INVALID', {
        message: 'This bookmark is not valid for this database.',
      });
    const restored = await this.download(this.replicaOf(database, bookmark.generation), temp, undefined);
    if (!restored)
      throw new AppError('SQLITE_BOOKMARK_INVALID', {
        message: 'The state this bookmark points to is no longer kept.',
      });
    return bookmark.at;
  }

  private async download(replica: ReplicaOf, temp: string, timestamp: Date | undefined): Promise<boolean> {
    try {
      return await this.deps.shard.replicator.restore(replica, temp, timestamp);
    } catch (err) {
      if (err instanceof LitestreamError && /timestamp does not exist/.test(err.message)) throw err;
      throw Object.assign(new AppError('SQLITE_RESTORE_FAILED', { retryAfterSeconds: 10 }), { cause: err });
    }
  }

  private async windowOf(database: DatabaseOf): Promise<RestoreWindow | undefined> {
    try {
      return await this.deps.shard.replicator.restoreWindow(
        this.replicaOf(database, database.replicaGeneration),
      );
    } catch (err) {
      throw Object.assign(new AppError('SQLITE_RESTORE_FAILED', { retryAfterSeconds: 10 }), { cause: err });
    }
  }

  private replicaOf(database: DatabaseOf, generation: number): ReplicaOf {
    return { id: database.id, siteId: database.siteId, path: database.path, replicaGeneration: generation };
  }

  private mustReplicate(database: DatabaseOf): void {
    if (!this.deps.shard.replicator.enabled || !database.replicationEnabled)
      throw new AppError('SQLITE_REPLICATION_OFF');
  }
}

const busy = () =>
  new AppError('CAPACITY', {
    message: 'This database is changing hands or being restored; try again shortly.',
    retryAfterSeconds: 2,
  });
