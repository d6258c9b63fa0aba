// A `hostplane serve` shard for bench/replication: the built binary as its own process (so its RSS,
// threads and descriptors are its own), on a data dir the bench keeps across restarts (a restart
// on the same dir is a pod coming back; a wiped sqlite dir is a lost volume). Its start is timed
// from spawn to the first /readyz 200, polled every 10 ms; its Litestream child is found by pid.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { childPids } from '../../test/support/litestream.js';
import { freePort, terminate } from '../../test/support/procs.js';
import { request } from '../support/http.js';
import { runCli } from '../support/server.js';

export interface ShardOptions {
  bin: string;
  name: string;
  dataDir: string;
  /** DATABASE_URL, S3_*, HOSTPLANE_SQLITE_REPLICATION, … */
  env: NodeJS.ProcessEnv;
}

export interface Shard {
  child: ChildProcess;
  pid: number;
  port: number;
  metricsPort: number;
  env: NodeJS.ProcessEnv;
  /** Milliseconds from spawn to the first /readyz 200. */
  readyMs: number;
  /** SIGTERM (the graceful stop: last syncs, leases released); resolves with how long it took. */
  stop(): Promise<number>;
  /** SIGKILL to the shard and its children (the bench's own clean-up after a failure). */
  kill(): Promise<void>;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

export async function launchShard(opts: ShardOptions): Promise<Shard> {
  const port = await freePort();
  const metricsPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOST: '127.0.0.1',
    HOSTPLANE_DATA_DIR: opts.dataDir,
    HOSTPLANE_BASE_URL: `http://localhost:${port}`,
    HOSTPLANE_SITES_DOMAIN: 'localhost',
    HOSTPLANE_SQLITE_SHARD_NAME: opts.name,
    LOG_LEVEL: process.env.BENCH_SHARD_LOG_LEVEL ?? 'warn',
    ...opts.env,
    PORT: String(port),
    HOSTPLANE_METRICS_PORT: String(metricsPort),
  };
  let output = '';
  const started = performance.now();
  const child = spawn(process.execPath, [path.resolve(opts.bin), 'serve'], {
    env,
    cwd: opts.dataDir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-16_384);
    if (process.env.BENCH_SHARD_LOG) appendFileSync(process.env.BENCH_SHARD_LOG, chunk);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const kill = async () => {
    const children = child.pid ? childPids(child.pid) : [];
    if (child.exitCode === null && child.signalCode === null) await terminate(child, 'SIGKILL');
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  };
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(
        `shard ${opts.name} exited at start (${child.exitCode ?? child.signalCode}):\n${output}`,
      );
    const status = await request(port, 'GET', '/readyz', {}, undefined, agent).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (Date.now() > deadline) {
      await kill();
      throw new Error(`shard ${opts.name} not ready within 300 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  const readyMs = performance.now() - started;
  return {
    child,
    pid: child.pid!,
    port,
    metricsPort,
    env,
    readyMs,
    async stop() {
      const t0 = performance.now();
      await terminate(child, 'SIGTERM', 60_000);
      if (child.exitCode !== 0)
        throw new Error(`shard ${opts.name} stopped with ${child.exitCode}:\n${output}`);
      return performance.now() - t0;
    },
    kill,
  };
}

/** 503 answers the bench retried (after their Retry-After), by message: reported with the figures. */
export const retried = new Map<string, number>();

/**
 * The shard's JSON API on loopback; throws on a non-2xx answer. A 503 with `retry_after` (the
 * database is moving, the shard is busy) is retried as a client would, up to 10 times, and counted.
 */
export async function api(
  port: number,
  method: string,
  route: string,
  headers: Record<string, string>,
  json?: unknown,
): Promise<Record<string, unknown>> {
  const body = json === undefined ? undefined : JSON.stringify(json);
  for (let attempt = 1; ; attempt++) {
    const res = await request(
      port,
      method,
      route,
      body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body,
      agent,
    );
    if (res.status === 503 && attempt < 10) {
      const answer = JSON.parse(res.body || '{}') as { message?: string; retry_after?: number };
      if (answer.retry_after !== undefined) {
        const key = `${route}: ${answer.message}`;
        retried.set(key, (retried.get(key) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, answer.retry_after! * 1000));
        continue;
      }
    }
    if (res.status < 200 || res.status >= 300)
      throw new Error(`${method} ${route} → ${res.status} ${res.body.slice(0, 500)}`);
    return (res.body ? JSON.parse(res.body) : {}) as Record<string, unknown>;
  }
}

/** A site on the enterprise plan (no SQLite caps), through the admin CLI: its API key. */
export async function createSite(bin: string, shard: Shard, slug: string): Promise<string> {
  const args = ['admin', 'create-site', '--slug', slug, '--email', `${slug}@example.com`];
  const stdout = await runCli(path.resolve(bin), [...args, '--plan', 'enterprise', '--json'], shard.env);
  return (JSON.parse(stdout.trim().split('\n').pop() ?? '') as { apiKey: string }).apiKey;
}

/** A database (install, no user auth): its scoped token. */
export async function installDatabase(shard: Shard, apiKey: string, dbPath: string): Promise<string> {
  const install = await api(
    shard.port,
    'POST',
    '/api/v1/sqlite/auth/install',
    { 'x-api-key': apiKey },
    { path: dbPath, name: dbPath, requireUserAuth: false },
  );
  return install.token as string;
}

/** The headers of a CRUD call with `token` on a site's database (the Origin carries the shard's port). */
export function scoped(shard: Shard, slug: string, token: string): Record<string, string> {
  return { 'x-sqlite-token': token, origin: `http://${slug}.localhost:${shard.port}` };
}

/** A histogram's _sum and _count (no labels) from the shard's /metrics. */
export async function histogram(shard: Shard, name: string): Promise<{ sum: number; count: number }> {
  const res = await request(shard.metricsPort, 'GET', '/metrics', {}, undefined, agent);
  const value = (suffix: string) => {
    const line = res.body.split('\n').find((l) => l.startsWith(`${name}_${suffix} `));
    return line ? Number(line.split(' ')[1]) : NaN;
  };
  return { sum: value('sum'), count: value('count') };
}

/** The shard's Litestream (`litestream replicate`): its direct child named litestream. */
export function litestreamPid(shard: Shard): number {
  const pid = childPids(shard.pid).find(
    (p) => readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'litestream',
  );
  if (!pid) throw new Error(`shard ${shard.pid} has no litestream child`);
  return pid;
}

export interface ProcSample {
  rssKb: number;
  threads: number;
  fds: number;
  /** User + system CPU seconds so far, all threads. */
  cpuSeconds: number;
}

/** VmRSS, Threads, open descriptors and CPU time of a process (Linux /proc). */
export function sampleProc(pid: number): ProcSample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    rssKb: field('VmRSS'),
    threads: field('Threads'),
    fds: readdirSync(`/proc/${pid}/fd`).length,
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100,
  };
}

/** Removes a database's file and companions from the shard's sqlite dir (a lost volume, for one file). */
export async function wipeDatabase(dataDir: string, databaseId: number): Promise<void> {
  const dir = path.join(dataDir, 'sqlite');
  const base = `${databaseId}.sqlite`;
  for (const name of await readdir(dir))
    if (name === base || name.startsWith(`${base}-`) || name === `.${base}-litestream`)
      await rm(path.join(dir, name), { recursive: true, force: true });
}
