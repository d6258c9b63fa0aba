import { randomBytes } from 'node:crypto';
import { access, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../errors/index.js';
import type { SqliteDatabase, SqlitePool } from '../engine/index.js';
import type { ReplicationState } from '../tables.js';
import { restoreDuration, restoreFailures, restoresTotal } from '../metrics.js';
import type { ReplicaOf, Replicator } from './replicator.js';

/** A database as its owner needs it at open: where its replica is, and what it last reported. */
export interface DatabaseRecord extends ReplicaOf {
  /** The version last reported to PostgreSQL: above 0, the database has had writes. */
  version: number;
  replicationEnabled: boolean;
  /** `pending` until a shard first opened it: after that, a missing file means a lost one. */
  replicationState: ReplicationState;
}

export interface DatabaseReport {
  replicationState?: ReplicationState;
  replicatedAt?: Date;
  restorableFrom?: Date | null;
  sizeBytes?: number;
  version?: number;
}

/** What the shard keeps in PostgreSQL about the databases it owns (Shards implements it). */
export interface Ownership {
  /** Takes or keeps the lease; false when another shard holds it or the database is placed elsewhere. */
  acquire(databaseId: number): Promise<boolean>;
  /** Whether the lease is held and recent enough to act on without asking PostgreSQL. */
  confirmed(databaseId: number): boolean;
  /** Whether the last acquire took the lease over from another shard after it ran out (asked once). */
  tookOver(databaseId: number): boolean;
  /** Moves the database's replica to generation `from + 1` (unless another already did); the new one. */
  nextGeneration(databaseId: number, from: number): Promise<number>;
  release(databaseId: number): Promise<void>;
  /** The database's row as it is now (undefined: deleted). */
  record(databaseId: number): Promise<DatabaseRecord | undefined>;
  report(databaseId: number, report: DatabaseReport): Promise<void>;
}

export interface LetGoOptions {
  /** Remove the local copy (it moved away, or the database was deleted). */
  removeFile: boolean;
  /** Keep the lease (a stopping shard releases all of them at once). */
  keepLease?: boolean;
  /** No last sync: the database was deleted. */
  discard?: boolean;
}

interface FileSource {
  fileFor(database: { id: number }): Promise<string>;
}

/** A database that failed to restore is not tried again for this long (each try downloads it). */
const FAILED_RETRY_MS = 30_000;

const unavailable = (reason: 'restore_failed' | 'replication_failed' | 'file_lost') =>
  new AppError('SQLITE_DATABASE_UNAVAILABLE', { reason, retryAfterSeconds: 30 });

/**
 * Opens a database for its owner, in the order that keeps it safe: the lease first; a missing
 * file restored from the replica (to a temporary file, integrity-checked, renamed into place) —
 * and never an empty database served in place of a lost one; then the file opened in the pool;
 * then registered with Litestream, before any call can write to it unreplicated.
 */
export class DatabaseOpener {
  private readonly failedAt = new Map<number, { at: number; error: AppError }>();

  constructor(
    private readonly files: FileSource,
    private readonly replicator: Replicator,
    private readonly ownership: Ownership,
    private readonly pool: () => SqlitePool,
  ) {}

  /** `swapped`: the file in place was just put there on purpose (a point-in-time restore). */
  async open(
    databaseId: number,
    maxBytes: number | null,
    options: { swapped?: boolean } = {},
  ): Promise<{ db: SqliteDatabase; file: string; replicated: boolean; replica: ReplicaOf }> {
    const failed = this.failedAt.get(databaseId);
    if (failed && Date.now() - failed.at < FAILED_RETRY_MS) throw failed.error;
    if (!(await this.ownership.acquire(databaseId)))
      throw new AppError('CAPACITY', {
        message: 'Another shard holds this database right now; try again shortly.',
        retryAfterSeconds: 5,
      });
    const record = await this.ownership.record(databaseId);
    if (!record)
      throw new AppError('CAPACITY', { message: 'This database was just removed.', retryAfterSeconds: 1 });
    const replicated = this.replicator.enabled && record.replicationEnabled;
    const file = await this.files.fileFor(record);
    const takenOver = this.ownership.tookOver(databaseId);
    // A copy left here from before another shard owned it is behind: the replica is the truth.
    if (takenOver && replicated) await this.removeFile(databaseId);
    let db: SqliteDatabase;
    try {
      const hadFile = await exists(file);
      if (!hadFile) await this.restoreMissing(record, file, replicated);
      db = await this.pool().open(file, { maxBytes });
      if (hadFile && replicated && !options.swapped && (await db.version()).version < record.version) {
        // Behind what its last owner reported (it moved away and back while this copy slept):
        // the replica has what came after.
        await db.close();
        await this.removeFile(databaseId);
        await this.restoreMissing(record, file, replicated);
        db = await this.pool().open(file, { maxBytes });
      }
    } catch (err) {
      if (err instanceof AppError) this.failedAt.set(databaseId, { at: Date.now(), error: err });
      throw err;
    }
    this.failedAt.delete(databaseId);
    if (!replicated) {
      await this.ownership.report(databaseId, { replicationState: 'off' });
      return { db, file, replicated, replica: record };
    }
    try {
      // The shard it was taken from may still ship its tail into the old generation: replicate
      // into a new one, so the two histories never meet.
      if (takenOver && replicated)
        record.replicaGeneration = await this.ownership.nextGeneration(databaseId, record.replicaGeneration);
      await this.replicator.attach(file, record);
    } catch (err) {
      // Not one write may be acknowledged unreplicated: the file closes again, the call fails.
      await db.close();
      restoreFailures.inc({ reason: 'register_failed' });
      await this.ownership.report(databaseId, { replicationState: 'register_failed' }).catch(() => undefined);
      throw Object.assign(unavailable('replication_failed'), { cause: err });
    }
    await this.ownership.report(databaseId, { replicationState: 'replicating' });
    return { db, file, replicated, replica: record };
  }

  /** The file is not here: a new pod, a wiped volume, or the database was placed here. */
  private async restoreMissing(record: DatabaseRecord, file: string, replicated: boolean): Promise<void> {
    let restored = false;
    if (replicated) {
      await this.ownership.report(record.id, { replicationState: 'restoring' });
      const temp = `${file}.restoring-${randomBytes(4).toString('hex')}`;
      const stop = restoreDuration.startTimer();
      try {
        restored = await this.replicator.restore(record, temp);
        if (restored) {
          // A WAL or Litestream state left beside a lost file belongs to another history.
          await removeCompanions(file);
          await rename(temp, file);
          stop();
        }
        restoresTotal.inc({ kind: 'start', outcome: restored ? 'restored' : 'none' });
      } catch (err) {
        restoresTotal.inc({ kind: 'start', outcome: 'failed' });
        restoreFailures.inc({ reason: 'restore_failed' });
        await this.ownership.report(record.id, { replicationState: 'restore_failed' }).catch(() => undefined);
        throw Object.assign(unavailable('restore_failed'), { cause: err });
      } finally {
        await rm(temp, { force: true });
      }
    }
    if (!restored && (record.version > 0 || record.replicationState !== 'pending')) {
      // A shard had it open (its version is reported only every 10 s), and neither its file nor
      // a replica is here: serving an empty database in its place would look like data loss.
      restoreFailures.inc({ reason: 'file_lost' });
      await this.ownership.report(record.id, { replicationState: 'restore_failed' }).catch(() => undefined);
      throw unavailable('file_lost');
    }
  }

  /**
   * Closes an open database: the replica brought in step (unless it is being discarded), the file
   * closed, Litestream let go of it; the file and the lease by option. A failed last sync throws
   * before anything is closed: the database stays served here rather than move without its tail.
   */
  async close(
    databaseId: number,
    db: SqliteDatabase | undefined,
    file: string | undefined,
    options: LetGoOptions,
  ): Promise<void> {
    if (file && !options.discard) await this.replicator.flush(file);
    if (db?.usable) {
      // Its figures as it is let go, so the next owner can tell a stale copy from a current one.
      const { version, sizeBytes } = await db.version();
      await this.ownership.report(databaseId, { version, sizeBytes }).catch(() => undefined);
    }
    if (db) await db.close();
    if (file) await this.replicator.detach(file);
    if (options.removeFile) await this.removeFile(databaseId);
    if (!options.keepLease) await this.release(databaseId);
  }

  async removeFile(databaseId: number): Promise<void> {
    const file = await this.files.fileFor({ id: databaseId });
    await rm(file, { force: true });
    await removeCompanions(file);
  }

  async release(databaseId: number): Promise<void> {
    await this.ownership.release(databaseId);
  }
}

/**
 * At a shard's start, before it opens anything: the temporary files of restores a crash
 * interrupted, and the files of databases that are gone or that another shard now owns (they
 * moved while this one was down; opened here again later, they would be behind their replica).
 * A file whose database nobody else owns is kept, whatever its placement says.
 */
export async function removeLeftovers(
  dir: string,
  ownedElsewhere: (ids: number[]) => Promise<ReadonlySet<number>>,
): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const idOf = (name: string) => /^\.?(\d+)\.sqlite(?:-wal|-shm|-litestream)?$/.exec(name)?.[1];
  const ids = [...new Set(names.map(idOf).filter((id) => id !== undefined))].map(Number);
  const elsewhere = ids.length > 0 ? await ownedElsewhere(ids) : new Set<number>();
  const removed: string[] = [];
  for (const name of names) {
    const id = idOf(name);
    const temporary = /\.sqlite\.(?:restoring|pitr)-[0-9a-z]+$/.test(name);
    if (temporary || (id !== undefined && elsewhere.has(Number(id)))) {
      await rm(path.join(dir, name), { recursive: true, force: true });
      removed.push(name);
    }
  }
  return removed;
}

/** The WAL, shared-memory index and Litestream's local state of a database file. */
export async function removeCompanions(file: string): Promise<void> {
  const meta = path.join(path.dirname(file), `.${path.basename(file)}-litestream`);
  await Promise.all([
    rm(`${file}-wal`, { force: true }),
    rm(`${file}-shm`, { force: true }),
    rm(meta, { recursive: true, force: true }),
  ]);
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}
