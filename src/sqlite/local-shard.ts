import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors/index.js';
import { tallyHistogram } from '../observability/index.js';
import { SqlitePool, type CallEvent, type SqliteDatabase } from './engine/index.js';
import type { SqliteDatabaseRow } from './tables.js';
import { queueWait } from './metrics.js';

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
function recordCall(event: CallEvent): void {
  let wait = queueWaitOf.get(event.op);
  if (!wait) queueWaitOf.set(event.op, (wait = tallyHistogram(queueWait, { op: event.op })));
  wait.observe(event.queueMs / 1000);
}

/**
 * The databases this process serves: each opened once in the engine's worker pool (pinned to a
 * worker, its writes serialized) and kept open. Standalone there is one shard, this process.
 */
export class LocalShard {
  private readonly open = new Map<number, Promise<SqliteDatabase>>();
  // Started on first use: its worker threads cost start-up time a process without SQLite traffic
  // should not pay.
  private pool: SqlitePool | undefined;

  constructor(
    private readonly files: DatabaseFiles,
    /** Takes or keeps the database's lease; false when another shard holds it. */
    private readonly lease: (databaseId: number) => Promise<boolean> = async () => true,
    private readonly newPool: () => SqlitePool = () => new SqlitePool({ onCall: recordCall }),
  ) {}

  /** The open handle of `database` (opened, and created if absent, on first use), with its cap. */
  async handle(database: Pick<SqliteDatabaseRow, 'id'>, maxBytes: number | null): Promise<SqliteDatabase> {
    if (!(await this.lease(database.id)))
      throw new AppError('CAPACITY', {
        message: 'Another shard holds this database right now; try again shortly.',
        retryAfterSeconds: 5,
      });
    let opening = this.open.get(database.id);
    if (!opening) {
      this.pool ??= this.newPool();
      const pool = this.pool;
      opening = this.files.fileFor(database).then((file) => pool.open(file, { maxBytes }));
      opening.catch(() => this.open.delete(database.id));
      this.open.set(database.id, opening);
    }
    const db = await opening;
    if (!db.usable) {
      // Its worker died (the pool refused its calls meanwhile): open it again, on a new worker.
      if (this.open.get(database.id) === opening) this.open.delete(database.id);
      return this.handle(database, maxBytes);
    }
    if (db.maxBytes !== maxBytes) await db.setMaxBytes(maxBytes);
    return db;
  }

  async close(): Promise<void> {
    this.open.clear();
    await this.pool?.close();
    this.pool = undefined;
  }
}
