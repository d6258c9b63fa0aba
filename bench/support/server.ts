// A built `hostplane serve` for a benchmark: its own process (so its CPU time and RSS are its own),
// on loopback ports picked free, with a throwaway data dir unless the bench brings one; ready once
// /readyz answers 200. The admin CLI reaches it through the admin socket in that data dir.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { S3Env } from '../../test/support/minio.js';
import { freePort, terminate, waitUntilReady } from '../../test/support/procs.js';

const execFileAsync = promisify(execFile);

export interface ServerOptions {
  /** The built CLI (`make build`: dist/src/cli/main.js), resolved against the working directory. */
  bin: string;
  /** Names the throwaway data dir (hostplane-bench-<name>-…) and the server in errors. */
  name: string;
  /** Beside process.env and the loopback defaults: DATABASE_URL, S3_*, LOG_LEVEL, limits, … */
  env?: NodeJS.ProcessEnv;
  /** A data dir the bench owns (kept by stop()); a throwaway one otherwise (removed by stop()). */
  dataDir?: string;
  /** /metrics on a port of its own (`metricsPort`); otherwise off. */
  metrics?: boolean;
  /** HOSTPLANE_BASE_URL http://localhost:<port> and sites at <slug>.localhost:<port>. */
  localhostUrls?: boolean;
  /** Arguments for the server's Node (e.g. --cpu-prof) and for `serve` (e.g. --role all). */
  nodeArgs?: string[];
  serveArgs?: string[];
  /** Wraps the server's command line, e.g. in taskset to pin it to a CPU. */
  wrap?: (command: string, args: string[]) => [string, string[]];
  /** Run the server in its data dir, so that nothing it writes lands in the checkout. */
  runInDataDir?: boolean;
  /** The server's stdout and stderr: the bench's own (default) or nowhere. */
  output?: 'inherit' | 'ignore';
}

export interface BenchServer {
  child: ChildProcess;
  pid: number;
  port: number;
  /** Set when `metrics` was asked for. */
  metricsPort: number | undefined;
  dataDir: string;
  /** The server's whole environment, which the admin CLI needs too (data dir, database). */
  env: NodeJS.ProcessEnv;
  /** `hostplane admin create-site` on this server (enterprise plan): the new site's API key. */
  createSite(slug: string, email?: string): Promise<{ apiKey: string }>;
  /** SIGTERM (SIGKILL after 10 s), then the throwaway data dir goes; safe to call twice. */
  stop(): Promise<void>;
}

/** The variables that point the server's blob store at a bucket of a test MinIO (test/support). */
export function s3Env(s3: S3Env, bucket: string): NodeJS.ProcessEnv {
  return {
    S3_BUCKET: bucket,
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: s3.region,
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
}

/** `node <bin> <args>` to its end: its stdout, or an error with its stderr. */
export async function runCli(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  try {
    const { stdout } = await execFileAsync(process.execPath, [bin, ...args], {
      env,
      maxBuffer: 1 << 24,
    });
    return stdout;
  } catch (err) {
    const { code, stderr } = err as { code?: unknown; stderr?: string };
    throw new Error(`${args.slice(0, 2).join(' ')} exited ${String(code)}: ${stderr ?? ''}`.trim());
  }
}

export async function startServer(opts: ServerOptions): Promise<BenchServer> {
  const bin = path.resolve(opts.bin);
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`make build\` first`);
  const ownsDataDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), `hostplane-bench-${opts.name}-`)));
  let child: ChildProcess | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child) await terminate(child, 'SIGTERM', 10_000);
    if (ownsDataDir) await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    const metricsPort = opts.metrics ? await freePort() : undefined;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: '127.0.0.1',
      HOSTPLANE_DATA_DIR: dataDir,
      ...(opts.localhostUrls
        ? { HOSTPLANE_BASE_URL: `http://localhost:${port}`, HOSTPLANE_SITES_DOMAIN: 'localhost' }
        : {}),
      ...opts.env,
      PORT: String(port),
      HOSTPLANE_METRICS_PORT: String(metricsPort ?? 0),
    };
    const args = [...(opts.nodeArgs ?? []), bin, 'serve', ...(opts.serveArgs ?? [])];
    const [command, argv] = opts.wrap ? opts.wrap(process.execPath, args) : [process.execPath, args];
    const server = spawn(command, argv, {
      env,
      cwd: opts.runInDataDir ? dataDir : undefined,
      stdio: ['ignore', opts.output ?? 'inherit', opts.output ?? 'inherit'],
    });
    child = server;
    // Its output goes to the bench's terminal (or nowhere), so an early exit is reported bare.
    const ready = async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200;
    await waitUntilReady(`hostplane serve (bench ${opts.name})`, server, () => '', ready, 60_000);
    return {
      child: server,
      pid: server.pid!,
      port,
      metricsPort,
      dataDir,
      env,
      async createSite(slug, email = 'bench@example.com') {
        const args = [
          'admin',
          'create-site',
          '--slug',
          slug,
          '--email',
          email,
          '--plan',
          'enterprise',
          '--json',
        ];
        const stdout = await runCli(bin, args, env);
        // The JSON is the last line printed.
        return JSON.parse(stdout.trim().split('\n').pop() ?? '') as { apiKey: string };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
