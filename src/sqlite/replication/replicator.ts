import { access } from 'node:fs/promises';
import path from 'node:path';
import { delimiter } from 'node:path';
import type { Config } from '../../config/index.js';
import { AppError } from '../../errors/index.js';
import type { Logger } from '../../observability/index.js';
import { litestreamRestarts } from '../metrics.js';
import { Litestream, type RestoreWindow } from './litestream.js';
import { replicaKeyPrefix } from './replica-path.js';

/** The fields of a database row replication needs. */
export interface ReplicaOf {
  id: number;
  siteId: number;
  path: string;
  replicaGeneration: number;
}

/**
 * What a shard asks of replication, whatever carries it: Litestream under the shard, or nothing
 * (no S3, no binary, or turned off: the file on the shard's volume is the only copy).
 */
export interface Replicator {
  readonly enabled: boolean;
  /** Restores the replica of `db` into `out` (absent); false when it has no replica. */
  restore(db: ReplicaOf, out: string, timestamp?: Date): Promise<boolean>;
  /** Starts replicating `file` as the replica of `db`. */
  attach(file: string, db: ReplicaOf): Promise<void>;
  /** Waits until the replica holds everything the file's WAL has now. */
  flush(file: string): Promise<void>;
  /** Stops replicating `file` (flush first for a last sync). */
  detach(file: string): Promise<void>;
  /** Whether the replica holds every transaction the file has (asks for a sync, does not wait). */
  inStep(file: string): Promise<boolean>;
  restoreWindow(db: ReplicaOf): Promise<RestoreWindow | undefined>;
  close(): Promise<void>;
}

export const noReplication: Replicator = {
  enabled: false,
  restore: async () => false,
  attach: async () => undefined,
  flush: async () => undefined,
  detach: async () => undefined,
  inStep: async () => true,
  restoreWindow: async () => undefined,
  close: async () => undefined,
};

/** The Litestream replica URL of `db`: the blob store's bucket, under the replica prefix. */
export function replicaUrl(s3: NonNullable<Config['s3']>, prefix: string, db: ReplicaOf): string {
  const query = new URLSearchParams({ region: s3.region });
  if (s3.endpoint) query.set('endpoint', s3.endpoint);
  if (s3.forcePathStyle) query.set('forcePathStyle', 'true');
  const key = replicaKeyPrefix(prefix, db).split('/').map(encodeURIComponent).join('/');
  return `s3://${s3.bucket}/${key}?${query.toString()}`;
}

/** Where a binary named without a slash is on PATH (undefined: not found). */
async function findBinary(bin: string): Promise<string | undefined> {
  const candidates = bin.includes('/')
    ? [path.resolve(bin)]
    : (process.env.PATH ?? '').split(delimiter).map((dir) => path.join(dir, bin));
  for (const candidate of candidates) {
    try {
      await access(candidate, 1); // X_OK
      return candidate;
    } catch {
      // next
    }
  }
  return undefined;
}

/**
 * Replication as configured: Litestream when S3 is set and the binary is found (mode `auto`),
 * required to be so (mode `required`: a shard without it refuses to start), or none. Says once
 * at start which it is.
 */
export async function startReplication(deps: {
  config: Pick<Config, 's3' | 'sqliteReplication'>;
  dir: string;
  logger: Logger;
}): Promise<Replicator> {
  const { config, logger } = deps;
  const settings = config.sqliteReplication;
  if (settings.mode === 'off') {
    logger.info('SQLite databases are not replicated (HOSTPLANE_SQLITE_REPLICATION=off)');
    return noReplication;
  }
  const bin = await findBinary(settings.litestreamBin);
  const missing = !config.s3
    ? 'no S3 bucket is configured (S3_BUCKET)'
    : !bin
      ? `no litestream binary was found (${settings.litestreamBin}; set HOSTPLANE_LITESTREAM_BIN)`
      : undefined;
  if (missing) {
    if (settings.mode === 'required')
      throw new AppError('CONFIG_INVALID', {
        message: `HOSTPLANE_SQLITE_REPLICATION=required, but ${missing}`,
      });
    // Expected on a laptop without S3; with S3 set, a missing binary is likely a mistake.
    if (config.s3) logger.warn(`SQLite databases are not replicated: ${missing}`);
    else logger.info(`SQLite databases are not replicated: ${missing}`);
    return noReplication;
  }
  const s3 = config.s3!;
  const litestream = await Litestream.start({
    bin: bin!,
    dir: deps.dir,
    retentionHours: settings.retentionHours,
    metricsPort: settings.metricsPort,
    metricsHost: settings.metricsHost,
    logger,
  });
  logger.info(
    { retentionHours: settings.retentionHours, prefix: settings.prefix, pid: litestream.pid },
    'SQLite databases are replicated to S3 by Litestream',
  );
  return litestreamReplicator(litestream, (db) => replicaUrl(s3, settings.prefix, db), logger);
}

function litestreamReplicator(
  litestream: Litestream,
  urlOf: (db: ReplicaOf) => string,
  logger: Logger,
): Replicator {
  // What is registered, so a Litestream that died on its own can be restarted with all of it.
  const registered = new Map<string, string>();
  let closing = false;
  litestream.onExit = (code, signal) => {
    if (closing) return;
    litestreamRestarts.inc();
    logger.error({ code, signal }, 'litestream exited; restarting it and registering the databases again');
    void (async () => {
      for (let attempt = 0; !closing; attempt++) {
        try {
          await litestream.spawn();
          if (closing) return void (await litestream.stop()); // the shard stopped meanwhile
          for (const [file, url] of registered) await litestream.register(file, url);
          return;
        } catch (err) {
          logger.error({ err, attempt }, 'litestream restart failed');
          await new Promise((r) => setTimeout(r, Math.min(30_000, 500 * 2 ** attempt)).unref());
        }
      }
    })();
  };
  return {
    enabled: true,
    restore: (db, out, timestamp) => litestream.restore(urlOf(db), out, timestamp),
    async attach(file, db) {
      const url = urlOf(db);
      await litestream.register(file, url);
      registered.set(file, url);
    },
    async flush(file) {
      await litestream.sync(file);
    },
    async detach(file) {
      if (!registered.has(file)) return;
      // Forgotten first: a Litestream restarted meanwhile must not take a file let go back.
      registered.delete(file);
      await litestream.unregister(file);
    },
    async inStep(file) {
      const { txid, replicatedTxid } = await litestream.sync(file, false);
      return replicatedTxid >= txid;
    },
    restoreWindow: (db) => litestream.restoreWindow(urlOf(db)),
    async close() {
      closing = true;
      await litestream.stop();
    },
  };
}
