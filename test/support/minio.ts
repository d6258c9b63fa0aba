import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { captureOutput, freePort, terminate, waitUntilReady } from './procs.js';

/** How to reach an S3 server (what tests get through `inject('s3')`). */
export interface S3Env {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

export interface MinioServer extends S3Env {
  /** kill -9, keeping its data. */
  kill(): Promise<void>;
  /** Starts it again on the same port, data and credentials; resolves once it is live. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Built by test/tools/build.sh. */
export const MINIO_BIN = fileURLToPath(new URL('../../.cache/tools/minio', import.meta.url));

async function isLive(endpoint: string): Promise<boolean> {
  const res = await fetch(`${endpoint}/minio/health/live`, { signal: AbortSignal.timeout(2_000) });
  await res.body?.cancel();
  return res.status === 200;
}

/**
 * Starts a throwaway MinIO server on 127.0.0.1 (or `host`) storing into a fresh temp folder. `stop()` kills
 * it and deletes the folder.
 */
export async function startMinio(options: { host?: string } = {}): Promise<MinioServer> {
  const host = options.host ?? '127.0.0.1';
  try {
    accessSync(MINIO_BIN, constants.X_OK);
  } catch {
    throw new Error(`MinIO binary not found at ${MINIO_BIN}: run \`bash test/tools/build.sh\``);
  }
  const accessKeyId = 'hostplane-test';
  const secretAccessKey = randomBytes(18).toString('hex');
  const region = 'us-east-1';

  /** Runs MinIO on `port` over `dataDir`; resolves once it is live (rejects with its output if not). */
  const launch = async (dataDir: string, port: number, consolePort: number) => {
    const child = spawn(
      MINIO_BIN,
      [
        'server',
        dataDir,
        '--address',
        `${host}:${port}`,
        '--console-address',
        `${host}:${consolePort}`,
        '--quiet',
      ],
      {
        cwd: dataDir,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          MINIO_ROOT_USER: accessKeyId,
          MINIO_ROOT_PASSWORD: secretAccessKey,
          MINIO_REGION: region,
          MINIO_UPDATE: 'off',
          MINIO_BROWSER: 'off',
        },
      },
    );
    const output = captureOutput(child);
    try {
      await waitUntilReady('minio', child, output, () => isLive(`http://${host}:${port}`));
    } catch (err) {
      await terminate(child, 'SIGKILL');
      throw Object.assign(err as Error, { portTaken: /already in use/i.test(output()) });
    }
    return child;
  };

  // The free ports may be taken between probing and binding: retry a few times.
  for (let attempt = 1; ; attempt++) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hostplane-minio-'));
    const cleanupDir = (): void => rmSync(dataDir, { recursive: true, force: true });
    const port = await freePort();
    let consolePort = await freePort();
    while (consolePort === port) consolePort = await freePort();
    const endpoint = `http://${host}:${port}`;

    let child: ChildProcess | undefined;
    // Should the test run die without calling stop(), do not leave a server behind.
    const onExit = (): void => {
      child?.kill('SIGKILL');
      cleanupDir();
    };
    process.once('exit', onExit);
    try {
      child = await launch(dataDir, port, consolePort);
    } catch (err) {
      process.removeListener('exit', onExit);
      cleanupDir();
      if (attempt < 3 && (err as { portTaken?: boolean }).portTaken) continue;
      throw err;
    }

    let stopped: Promise<void> | undefined;
    return {
      endpoint,
      accessKeyId,
      secretAccessKey,
      region,
      async kill() {
        if (child) await terminate(child, 'SIGKILL');
        child = undefined;
      },
      async restart() {
        child ??= await launch(dataDir, port, consolePort);
      },
      stop: () =>
        (stopped ??= (async () => {
          process.removeListener('exit', onExit);
          if (child) await terminate(child, 'SIGTERM');
          cleanupDir();
        })()),
    };
  }
}

/** Creates a fresh, uniquely named bucket and returns its name. */
export async function createBucket(env: S3Env, name?: string): Promise<string> {
  const bucket = name ?? `test-${randomBytes(6).toString('hex')}`;
  const client = new S3Client({
    endpoint: env.endpoint,
    region: env.region,
    forcePathStyle: true,
    credentials: { accessKeyId: env.accessKeyId, secretAccessKey: env.secretAccessKey },
  });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
  return bucket;
}
