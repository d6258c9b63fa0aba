import { accessSync, constants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';

/** Built by test/tools/build.sh from the pin in test/tools/litestream/go.mod. */
export const LITESTREAM_BIN = fileURLToPath(new URL('../../.cache/tools/litestream', import.meta.url));

/** Fails (never skips) when the binary is missing: the durability tests need the real process. */
export function requireLitestream(): string {
  try {
    accessSync(LITESTREAM_BIN, constants.X_OK);
  } catch {
    throw new Error(`Litestream binary not found at ${LITESTREAM_BIN}: run \`bash test/tools/build.sh\``);
  }
  return LITESTREAM_BIN;
}

/** The pids of `pid`'s direct children (a shard's Litestream). */
export function childPids(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when there are none
  }
}

/** The environment of a `hostplane serve` shard that replicates to `bucket` with the pinned Litestream. */
export function replicatedShardEnv(
  s3: { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string },
  databaseUrl: string,
  bucket: string,
  shardName: string,
): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: databaseUrl,
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: bucket,
    S3_REGION: s3.region,
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    HOSTPLANE_SITES_DOMAIN: 'localhost',
    HOSTPLANE_SQLITE_SHARD_NAME: shardName,
    HOSTPLANE_SQLITE_REPLICATION: 'required',
    HOSTPLANE_LITESTREAM_BIN: requireLitestream(),
    LOG_LEVEL: process.env.DEBUG_SERVE_LOG ? 'debug' : 'info',
  };
}
