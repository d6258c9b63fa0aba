import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors/index.js';
import { tallyHistogram } from '../observability/index.js';
import { SqlitePool, type CallEvent, type SqliteDatabase } from './engine/index.js';
import type { SqliteDatabaseRow } from './tables.js';
import { queueWait, writeGroupSize } from './metrics.js';
import { noReplication, type ReplicaOf, type Replicator } from './replication/replicator.js';
import { DatabaseOpener, type LetGoOptions, type Ownership } from './replication/opener.js';

/**
 * Where a shard keeps its databases' files, behind one small interface so the cluster's storage
 * (a PVC restored from Litestream's replica) can take its place. Files are named by database id,
 * never by the tenant's path, so no path a tenant chooses reaches the file system.
 */
export interface DatabaseFiles {
  /** The file of `database`, its folder created. */
  fileFor(database: Pick<SqliteDatabaseRow, 'id'>): Promise<string>;
}

export function localDatabaseFiles(dir: string): DatabaseFiles {
  return {
    async fileFor(database) {
      await mkdir(dir, { recursive: true });
      return path.join(dir, `${database.id}.sqlite`);
    },
  };
}

const queueWaitOf = new Map<string, { observe(seconds: number): void }>();
const groupSize = tallyHistogram(writeGroupSize, {});
function recordCall(event: CallEvent): void {
  let wait = queueWaitOf.get(event.op);
  if (!wait) queueWaitOf.set(event.op, (wait = tallyHistogram(queueWait, { op: event.op })));
  wait.observe(event.queueMs / 1000);
  if (event.op === 'exec') groupSize.observe(event.group ?? 1);
}

/** Every database is this process's, and nothing is recorded (tests of the engine alone). */
const soleOwner: Ownership = {
  acquire: async () => true,
  confirmed: () => true,
  tookOver: () => false,
  nextGeneration: async (_id, from) => from,
  release: async () => undefined,
  record: async (id) => ({
    id,
    siteId: 0,
    path: '',
    replicaGeneration: 0,
    version: 0,
    replicationEnabled: false,
    replicationState: 'pending',
  }),
  report: async () => undefined,
};

interface OpenDatabase {
  opening: Promise<SqliteDatabase>;
  /** What `opening` resolved to, once it has (for the calls that need not wait for it). */
  ready?: SqliteDatabase;
  file?: string;
  replicated?: boolean;
  replica?: ReplicaOf;
  /** Calls running on it; a database let go waits for them. */
  inFlight: number;
  drained?: () => void;
  /** Set while it is let go: new calls are turned away. */
  leaving?: Promise<void>;
  /** Set while a point-in-time restore swaps its file (`leaving` is set too). */
  restoring?: boolean;
}

/** Runs `work` counted among the database's calls in flight (a database let go waits for them). */
function counted<T>(
  entry: OpenDatabase,
  db: SqliteDatabase,
  work: (db: SqliteDatabase) => Promise<T>,
): Promise<T> {
  entry.inFlight++;
  const done = () => {
    if (--entry.inFlight === 0) entry.drained?.();
  };
  let running: Promise<T>;
  try {
    running = work(db);
  } catch (err) {
    done();
    return Promise.reject(err as Error);
  }
  return running.then(
    (value) => {
      done();
      return value;
    },
    (err: unknown) => {
      done();
      throw err;
    },
  );
}

const away = (message: string, retryAfterSeconds = 1) =>
  new AppError('CAPACITY', { message, retryAfterSeconds });
const turnedAway = (entry: { restoring?: boolean }) =>
  entry.restoring
    ? away('This database is being restored to a point in time; try again shortly.', 2)
    : away('This database is moving to another shard; try again shortly.');

/**
 * The databases this process serves: each restored from its replica when its file is missing,
 * opened once in the engine's worker pool (pinned to a worker, its writes serialized), registered
 * with Litestream before its first call, and kept open until it is let go (moved to another shard,
 * deleted, or the shard stops). Standalone there is one shard, this process.
 */
export class LocalShard {
  private readonly open = new Map<number, OpenDatabase>();
  // Started on first use: its worker threads cost start-up time a process without SQLite traffic
  // should not pay.
  private pool: SqlitePool | undefined;
  private stopping = false;
  private opener: DatabaseOpener;
  private _replicator: Replicator = noReplication;

  constructor(
    private readonly files: DatabaseFiles,
    /** Takes or keeps the database's lease; false when another shard holds it. */
    lease: (databaseId: number) => Promise<boolean> = async () => true,
    private readonly newPool: () => SqlitePool = () => new SqlitePool({ onCall: recordCall }),
    private ownership: Ownership = { ...soleOwner, acquire: lease },
  ) {
    this.opener = this.newOpener();
  }

  private newOpener(): DatabaseOpener {
    return new DatabaseOpener(
      this.files,
      this._replicator,
      this.ownership,
      () => (this.pool ??= this.newPool()),
    );
  }

  get replicator(): Replicator {
    return this._replicator;
  }

  /** Before the first database opens: how they are replicated and whose leases they take. */
  replicateWith(replicator: Replicator, ownership: Ownership): void {
    this._replicator = replicator;
    this.ownership = ownership;
    this.opener = this.newOpener();
  }

  /** Runs `work` on the open handle of `database`; a database being let go waits for it. */
  use<T>(
    database: Pick<SqliteDatabaseRow, 'id'>,
    maxBytes: number | null,
    work: (db: SqliteDatabase) => Promise<T>,
  ): Promise<T> {
    // The usual call: open here, ours, usable, its cap unchanged: what `handle` would answer at
    // once, taken without its awaits (a few microtask turns of every point read).
    const entry = this.open.get(database.id);
    const db = entry?.ready;
    if (
      entry &&
      db &&
      !this.stopping &&
      !entry.leaving &&
      db.usable &&
      db.maxBytes === maxBytes &&
      this.ownership.confirmed(database.id)
    )
      return counted(entry, db, work);
    return this.useOpening(database, maxBytes, work);
  }

  private async useOpening<T>(
    database: Pick<SqliteDatabaseRow, 'id'>,
    maxBytes: number | null,
    work: (db: SqliteDatabase) => Promise<T>,
  ): Promise<T> {
    const db = await this.handle(database, maxBytes);
    const entry = this.open.get(database.id);
    if (entry?.leaving) throw turnedAway(entry);
    return entry ? counted(entry, db, work) : work(db);
  }

  /** The open handle of `database` (restored, created, registered on first use), with its cap. */
  async handle(database: Pick<SqliteDatabaseRow, 'id'>, maxBytes: number | null): Promise<SqliteDatabase> {
    if (this.stopping) throw away('This SQLite shard is stopping; try again shortly.', 2);
    let entry = this.open.get(database.id);
    if (entry?.leaving) throw turnedAway(entry);
    if (entry && !this.ownership.confirmed(database.id) && !(await this.ownership.acquire(database.id))) {
      // Not ours to serve (another shard's lease, or placed elsewhere): the lease round or the
      // placement check lets the file go, with a last sync when it moved by placement.
      throw away('Another shard holds this database now; try again shortly.', 5);
    }
    if (!entry) {
      const opened = this.opener.open(database.id, maxBytes);
      entry = { opening: opened.then((o) => o.db), inFlight: 0 };
      const fresh = entry;
      void opened.then(
        (o) =>
          Object.assign(fresh, { file: o.file, replicated: o.replicated, replica: o.replica, ready: o.db }),
        () => this.open.get(database.id) === fresh && this.open.delete(database.id),
      );
      this.open.set(database.id, entry);
    }
    const db = await entry.opening;
    if (!db.usable) {
      // Its worker died (the pool refused its calls meanwhile): open it again, on a new worker.
      if (this.open.get(database.id) === entry) this.open.delete(database.id);
      return this.handle(database, maxBytes);
    }
    if (db.maxBytes !== maxBytes) await db.setMaxBytes(maxBytes);
    return db;
  }

  /** Databases open here, by id. */
  openIds(): number[] {
    return [...this.open.keys()];
  }

  /** Whether an open database is registered with Litestream (undefined: not open yet). */
  replicatedHere(databaseId: number): boolean | undefined {
    return this.open.get(databaseId)?.replicated;
  }

  /** An open database's figures and file, for the shard's reports (undefined: not open). */
  async stateOf(
    databaseId: number,
  ): Promise<
    { version: number; sizeBytes: number; file: string; replicated: boolean; replica?: ReplicaOf } | undefined
  > {
    const entry = this.open.get(databaseId);
    if (!entry?.file || entry.leaving) return undefined;
    const db = await entry.opening.catch(() => undefined);
    if (!db?.usable) return undefined;
    const { version, sizeBytes } = await db.version();
    return {
      version,
      sizeBytes,
      file: entry.file,
      replicated: entry.replicated ?? false,
      replica: entry.replica,
    };
  }

  /**
   * Lets a database go: new calls are turned away (503, retry), running ones finish, the replica
   * gets a last sync, Litestream lets go of it, the file closes and its lease is released. With
   * `removeFile` the local copy goes too (it moved away, or was deleted).
   */
  async letGo(databaseId: number, options: LetGoOptions): Promise<void> {
    const entry = this.open.get(databaseId);
    if (entry?.restoring) {
      // A restore swaps the file and opens it again: let go of what it leaves open (once it
      // has settled; an entry it left behind as it was is let go as it is).
      await entry.leaving?.catch(() => undefined);
      if (this.open.get(databaseId) !== entry || !entry.restoring) return this.letGo(databaseId, options);
      entry.restoring = false;
      entry.leaving = undefined;
    }
    if (!entry) {
      if (options.removeFile) await this.opener.removeFile(databaseId);
      if (!options.keepLease) await this.opener.release(databaseId);
      return;
    }
    entry.leaving ??= (async () => {
      if (entry.inFlight > 0) await new Promise<void>((resolve) => (entry.drained = resolve));
      const db = await entry.opening.catch(() => undefined);
      try {
        // A database that was not replicated has no replica to bring in step.
        await this.opener.close(databaseId, db, entry.file, {
          ...options,
          discard: options.discard || !entry.replicated,
        });
      } catch (err) {
        entry.leaving = undefined; // not let go: it stays served here
        throw err;
      }
      this.open.delete(databaseId);
    })();
    await entry.leaving;
  }

  // --- point-in-time restore (replication/point-in-time.ts) ---------------------------------------

  /**
   * Swaps the file of an open database: as in letGo, new calls are turned away (503, retry) and
   * running ones finish; the replica gets its last sync and Litestream lets go of the file, which
   * closes (the lease is kept). `swap` replaces the file (told the version it had); the database is
   * then opened again through the opener — registered under the replica its row names now — and
   * `reopened` runs before any call reaches it. A failed `swap` reopens the file that is in place.
   */
  async replaceFile<T>(
    databaseId: number,
    maxBytes: number | null,
    swap: (file: string, versionBefore: number) => Promise<T>,
    reopened: (db: SqliteDatabase, file: string, result: T) => Promise<void>,
  ): Promise<T> {
    await this.handle({ id: databaseId }, maxBytes);
    const entry = this.open.get(databaseId);
    if (!entry?.file || entry.leaving) throw turnedAway(entry ?? {});
    let result: { value: T } | undefined;
    entry.restoring = true;
    entry.leaving = (async () => {
      if (entry.inFlight > 0) await new Promise<void>((resolve) => (entry.drained = resolve));
      let version: number;
      try {
        const db = await entry.opening;
        version = (await db.version()).version;
        await this.opener.close(databaseId, db, entry.file, { removeFile: false, keepLease: true });
      } catch (err) {
        Object.assign(entry, { leaving: undefined, restoring: false }); // still served as it was
        if (this.open.get(databaseId) === entry && !(await entry.opening.catch(() => undefined))?.usable)
          this.open.delete(databaseId); // its worker died: the next call opens it again
        throw err;
      }
      let failure: { err: unknown } | undefined;
      try {
        result = { value: await swap(entry.file!, version) };
      } catch (err) {
        failure = { err };
      }
      try {
        const opened = await this.opener.open(databaseId, maxBytes, { swapped: true });
        try {
          if (result) await reopened(opened.db, opened.file, result.value);
        } finally {
          this.open.set(databaseId, {
            opening: Promise.resolve(opened.db),
            ready: opened.db,
            file: opened.file,
            replicated: opened.replicated,
            replica: opened.replica,
            inFlight: 0,
          });
        }
      } catch (err) {
        if (this.open.get(databaseId) === entry) this.open.delete(databaseId); // the next call opens it
        throw err;
      }
      if (failure) throw failure.err;
    })();
    await entry.leaving;
    return result!.value;
  }

  /**
   * The graceful stop: no new calls, running ones finish, every database gets its last sync and
   * is let go, then Litestream stops. Leases are released by the caller after this (Shards.stop),
   * except those of the databases returned: their last sync failed.
   */
  async close(): Promise<number[]> {
    this.stopping = true;
    const ids = [...this.open.keys()];
    const settled = await Promise.allSettled(
      ids.map((id) => this.letGo(id, { removeFile: false, keepLease: true })),
    );
    // Their last sync failed: their leases run out rather than hand them over without their tail.
    const unsynced = ids.filter((_, i) => settled[i]!.status === 'rejected');
    this.open.clear();
    await this.replicator.close();
    await this.pool?.close();
    this.pool = undefined;
    return unsynced;
  }
}
