// Switch benchmark: how soon a deploy switch is served by every replica, and how long a one-file
// redeploy takes with the CLI. Two built `hostplane serve` processes (their own processes) share
// one PostgreSQL and one MinIO bucket (the test suite's throwaway servers, on loopback).
//
// - visibility: ROUNDS one-file deploys through replica A (create, PUT, finalize), each after both
//   replicas served (and cached) the previous version; from the finalize call's start until both
//   replicas serve the new version, read right after it returned (p50 / p99 / max). `stale` counts
//   reads after a switch returned that still got the old version (must be 0: the guarantee).
// - cli: replica B stopped, `hostplane deploy DIR` of a one-file folder whose file changed each
//   time, whole CLI process included (RUNS times; min / median / max).
//
//   make build
//   scripts/node.sh exec npx tsx bench/deploys/switch.ts          # --rounds 50 --runs 5 --bin dist/src/cli/main.js --json
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createBucket, startMinio } from '../../test/support/minio.js';
import { createDatabase, startPostgres } from '../../test/support/postgres.js';
import { request } from '../support/http.js';
import { s3Env, startServer, type BenchServer } from '../support/server.js';

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    rounds: { type: 'string', default: '50' },
    runs: { type: 'string', default: '5' },
    json: { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(values.rounds);
const RUNS = Number(values.runs);
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const execFileAsync = promisify(execFile);

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
const round1 = (n: number) => Math.round(n * 10) / 10;

async function main(): Promise<void> {
  const postgres = await startPostgres();
  const minio = await startMinio();
  const env = {
    DATABASE_URL: await createDatabase(postgres.url),
    ...s3Env(minio, await createBucket(minio)),
    LOG_LEVEL: 'error',
  };
  // One after the other: the first migrates the fresh database.
  const a = await startServer({ bin: values.bin, name: 'switch-a', env, localhostUrls: true });
  let b: BenchServer | undefined = await startServer({
    bin: values.bin,
    name: 'switch-b',
    env,
    localhostUrls: true,
  });
  const folder = await mkdtemp(path.join(os.tmpdir(), 'hostplane-bench-switch-'));
  try {
    const { apiKey: key } = await a.createSite('switch', 'switch@example.com');
    const host = 'switch.localhost';
    const call = async (method: string, p: string, body?: string | Buffer, type = 'application/json') => {
      const res = await request(
        a.port,
        method,
        p,
        { host: 'localhost', 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': type }) },
        body,
        agent,
      );
      if (res.status !== 200) throw new Error(`${method} ${p} → ${res.status} ${res.body}`);
      return JSON.parse(res.body) as Record<string, unknown>;
    };
    const page = (v: number) => Buffer.from(`<!doctype html><title>v${v}</title>`);
    const serves = async (port: number) =>
      (await request(port, 'GET', '/', { host }, undefined, agent)).body.match(/v(\d+)/)?.[1];
    /** Deploys version v through replica A; the time its finalize started and returned. */
    const deploy = async (v: number) => {
      const bytes = page(v);
      const created = await call(
        'POST',
        '/api/v1/deploys',
        JSON.stringify({ files: { 'index.html': sha256(bytes) } }),
      );
      const id = created.id as string;
      for (const hash of created.required as string[])
        await call('PUT', `/api/v1/deploys/${id}/files/${hash}`, bytes, 'application/octet-stream');
      const started = performance.now();
      await call('POST', `/api/v1/deploys/${id}/finalize`);
      return { started, returned: performance.now() };
    };

    await deploy(0);
    const visible: number[] = [];
    const finalize: number[] = [];
    let stale = 0;
    for (let v = 1; v <= ROUNDS; v++) {
      // Both replicas serve (and cache) the old version.
      for (const port of [a.port, b.port])
        for (let i = 0; i < 3; i++) if ((await serves(port)) !== String(v - 1)) throw new Error('not warm');
      const { started, returned } = await deploy(v);
      finalize.push(returned - started);
      const pending = new Set([a.port, b.port]);
      while (pending.size > 0)
        for (const port of [...pending]) {
          if ((await serves(port)) === String(v)) pending.delete(port);
          else stale += 1;
        }
      visible.push(performance.now() - started);
    }
    visible.sort((x, y) => x - y);
    finalize.sort((x, y) => x - y);

    // Standalone: one replica left.
    await b.stop();
    b = undefined;
    const cli: number[] = [];
    for (let run = 0; run <= RUNS; run++) {
      await writeFile(path.join(folder, 'index.html'), page(1000 + run));
      const start = performance.now();
      await execFileAsync(process.execPath, [values.bin, 'deploy', folder, '--json'], {
        env: { ...process.env, HOSTPLANE_API_KEY: key, HOSTPLANE_API_URL: `http://localhost:${a.port}` },
      });
      // The first run deploys to a site whose live version came from the API: counted as warm-up.
      if (run > 0) cli.push(performance.now() - start);
    }
    cli.sort((x, y) => x - y);

    const results = {
      switch_visible_p50_ms: round1(quantile(visible, 0.5)),
      switch_visible_p99_ms: round1(quantile(visible, 0.99)),
      switch_visible_max_ms: round1(visible.at(-1)!),
      finalize_p50_ms: round1(quantile(finalize, 0.5)),
      finalize_p99_ms: round1(quantile(finalize, 0.99)),
      stale_reads_after_return: stale,
      cli_one_file_redeploy_min_ms: Math.round(cli[0]!),
      cli_one_file_redeploy_median_ms: Math.round(quantile(cli, 0.5)),
      cli_one_file_redeploy_max_ms: Math.round(cli.at(-1)!),
    };
    console.log(values.json ? JSON.stringify(results) : results);
  } finally {
    await b?.stop();
    await a.stop();
    await rm(folder, { recursive: true, force: true });
    agent.destroy();
    await minio.stop();
    await postgres.stop();
  }
}

await main();
