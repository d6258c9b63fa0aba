// What every part of bench/replication shares: the throwaway PostgreSQL and MinIO of the test suite
// (test/support), a fresh database and bucket per shard, data dirs and shards that are cleaned up
// (killed, removed) on the way out whatever happened.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { requireLitestream } from '../../test/support/litestream.js';
import { createBucket, startMinio, type MinioServer } from '../../test/support/minio.js';
import { createDatabase, startPostgres, type PostgresServer } from '../../test/support/postgres.js';
import { s3Env } from '../support/server.js';
import { launchShard, type Shard } from './shard.js';

export const MIB = 1024 * 1024;

export const log = (message: string) => console.error(`bench-replication: ${message}`);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

export class Lab {
  private readonly cleanups: (() => Promise<void>)[] = [];

  private constructor(
    readonly bin: string,
    private readonly postgres: PostgresServer,
    private readonly minio: MinioServer,
  ) {}

  static async start(bin: string): Promise<Lab> {
    requireLitestream();
    const [postgres, minio] = await Promise.all([startPostgres(), startMinio()]);
    return new Lab(bin, postgres, minio);
  }

  /** A fresh PostgreSQL database and bucket, and the env a shard needs for them. */
  async backing(replication: 'required' | 'off'): Promise<NodeJS.ProcessEnv> {
    const [databaseUrl, bucket] = await Promise.all([
      createDatabase(this.postgres.url),
      createBucket(this.minio),
    ]);
    return {
      DATABASE_URL: databaseUrl,
      ...s3Env(this.minio, bucket),
      HOSTPLANE_SQLITE_REPLICATION: replication,
      HOSTPLANE_LITESTREAM_BIN: requireLitestream(),
    };
  }

  async dataDir(name: string): Promise<string> {
    const dir = await mkdtemp(path.join(os.tmpdir(), `hostplane-bench-replication-${name}-`));
    this.cleanups.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }

  /** Launches a shard, killed on the way out should it still run. */
  async shard(name: string, dataDir: string, env: NodeJS.ProcessEnv): Promise<Shard> {
    const shard = await launchShard({ bin: this.bin, name, dataDir, env });
    this.cleanups.push(() => shard.kill());
    return shard;
  }

  async close(): Promise<void> {
    for (const cleanup of this.cleanups.reverse()) await cleanup().catch(() => undefined);
    await Promise.all([this.postgres.stop(), this.minio.stop()]);
  }
}

/** Every database file of a stopped shard gone (its volume lost); Litestream's config stays. */
export async function wipeAllDatabases(dataDir: string): Promise<void> {
  const dir = path.join(dataDir, 'sqlite');
  for (const name of await readdir(dir))
    if (name !== 'litestream.yml') await rm(path.join(dir, name), { recursive: true, force: true });
}
