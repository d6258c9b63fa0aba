// Uploads through POST /api/v1/files/upload on PostgreSQL + MinIO: database round trips per upload,
// latency p50/p99 for 1 KB and 5 MB, and the server's peak RSS under 20 concurrent 10 MB uploads.
// A benchmark, not a test: it reports figures and asserts nothing about time. See README.md.
//
//   scripts/node.sh exec npx tsx bench/uploads/bench.ts [--bin dist/src/cli/main.js] [--json]
//
// The server is the built binary (`make build`), spawned as its own process so its RSS is its own;
// PostgreSQL and MinIO are the test suite's throwaway servers (test/support), on loopback.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createBucket, startMinio } from '../../test/support/minio.js';
import { createDatabase, startPostgres } from '../../test/support/postgres.js';
import { request } from '../support/http.js';
import { s3Env, startServer, type BenchServer } from '../support/server.js';

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    json: { type: 'boolean', default: false },
    'small-requests': { type: 'string', default: '600' },
    'large-requests': { type: 'string', default: '40' },
    concurrency: { type: 'string', default: '4' },
    'latency-only': { type: 'boolean', default: false },
  },
});
const bin = path.resolve(values.bin);
const SMALL_REQUESTS = Number(values['small-requests']);
const LARGE_REQUESTS = Number(values['large-requests']);
const CONCURRENCY = Number(values.concurrency);

const KB = 1000;
const MB = 1000 * 1000;

// ---------------------------------------------------------------------------------------------
// A PostgreSQL proxy that counts round trips: every Sync (end of an extended-protocol query) and
// every simple Query the client sends is one wait for the server.

interface RoundTripCounter {
  port: number;
  count(): number;
  close(): Promise<void>;
}

async function countingProxy(target: { host: string; port: number }): Promise<RoundTripCounter> {
  let roundTrips = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    let pending: Buffer = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      for (;;) {
        if (!started) {
          // StartupMessage / SSLRequest / GSSENCRequest: length-prefixed, no type byte.
          if (pending.length < 8) break;
          const length = pending.readInt32BE(0);
          const code = pending.readInt32BE(4);
          if (pending.length < length) break;
          pending = pending.subarray(length);
          if (code !== 80877103 && code !== 80877104) started = true;
          continue;
        }
        if (pending.length < 5) break;
        const length = pending.readInt32BE(1);
        if (pending.length < 1 + length) break;
        const type = String.fromCharCode(pending[0]!);
        if (type === 'S' || type === 'Q') roundTrips += 1;
        pending = pending.subarray(1 + length);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    count: () => roundTrips,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// The server under test.

/** A fresh server process on the bench's data dir (which outlives it), /metrics on a port of its own. */
const serve = (env: NodeJS.ProcessEnv) =>
  startServer({ bin, name: 'uploads', dataDir: env.HOSTPLANE_DATA_DIR, env, metrics: true });

// ---------------------------------------------------------------------------------------------
// Upload bodies: distinct content per request (no dedupe), built without re-encoding megabytes
// each time: base64(prefix ‖ tail) = base64(prefix) + base64(tail) when the prefix is 12 bytes.

function uploadBodies(size: number, pathPrefix: string) {
  const tail = randomBytes(size - 12).toString('base64');
  let n = 0;
  return () => {
    const prefix = Buffer.alloc(12);
    prefix.writeUInt32BE(process.pid, 0);
    prefix.writeUInt32BE(++n, 8);
    const content = prefix.toString('base64') + tail;
    // A handful of paths, overwritten in turn: the site's file count stays small.
    return JSON.stringify({ path: `${pathPrefix}-${n % 8}.png`, content, encoding: 'base64' });
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** Closed loop: `concurrency` clients each send the next request when the last one answered. */
async function latency(port: number, headers: Record<string, string>, total: number, next: () => string) {
  const times: number[] = [];
  const statuses = new Map<number, number>();
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent < total) {
        sent += 1;
        const body = next();
        const t0 = performance.now();
        const res = await request(port, 'POST', '/api/v1/files/upload', headers, body);
        times.push(performance.now() - t0);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  return {
    requests: times.length,
    p50Ms: Math.round(percentile(times, 50) * 10) / 10,
    p99Ms: Math.round(percentile(times, 99) * 10) / 10,
    perSecond: Math.round((times.length / seconds) * 10) / 10,
    statuses: Object.fromEntries(statuses),
  };
}

/**
 * Mean duration of the upload's database transaction (the time the site's row lock is held), from
 * the server's own hostplane_db_operation_duration_seconds{operation="commit_file"}.
 */
async function commitTransactionMs(metricsPort: number): Promise<number> {
  const text = (await request(metricsPort, 'GET', '/metrics', {})).body;
  const sample = (name: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${name}{`) && l.includes('operation="commit_file"'))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const count = sample('hostplane_db_operation_duration_seconds_count');
  return Math.round((sample('hostplane_db_operation_duration_seconds_sum') / count) * 1000 * 100) / 100;
}

const memoryOf = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rssMb: Math.round(kb('VmRSS') / 1024), peakMb: Math.round(kb('VmHWM') / 1024) };
};

let server: BenchServer | undefined;

/** 20 uploads of 10 MB sent at once, to the sites of `headers` in turn. */
async function burst(env: NodeJS.ProcessEnv, headers: Record<string, string>[]) {
  server = await serve(env);
  const pid = server.pid;
  const idle = memoryOf(pid);
  const next = uploadBodies(10 * MB, 'burst');
  const bodies = Array.from({ length: 20 }, () => Buffer.from(next()));
  let sampledPeak = 0;
  const sampler = setInterval(() => (sampledPeak = Math.max(sampledPeak, memoryOf(pid).rssMb)), 20);
  const t0 = performance.now();
  const answers = await Promise.all(
    bodies.map((body, i) =>
      request(server!.port, 'POST', '/api/v1/files/upload', headers[i % headers.length]!, body),
    ),
  );
  clearInterval(sampler);
  const statuses: Record<number, number> = {};
  for (const a of answers) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
  const peakMb = memoryOf(pid).peakMb;
  await server.stop();
  server = undefined;
  return {
    idleRssMb: idle.rssMb,
    peakRssMb: peakMb,
    sampledPeakRssMb: sampledPeak,
    seconds: Math.round((performance.now() - t0) / 100) / 10,
    statuses,
    refusal: answers.find((a) => a.status !== 200)?.body,
  };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const log = (line: string) => values.json || console.log(line);
  const postgres = await startPostgres();
  const minio = await startMinio();
  const proxy = await countingProxy({ host: '127.0.0.1', port: Number(new URL(postgres.url).port) });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-bench-uploads-'));
  try {
    const dbUrl = new URL(await createDatabase(postgres.url));
    dbUrl.port = String(proxy.port);
    const env: NodeJS.ProcessEnv = {
      HOST: '127.0.0.1',
      HOSTPLANE_DATA_DIR: dataDir,
      HOSTPLANE_BASE_URL: 'http://localhost:8080',
      DATABASE_URL: dbUrl.toString(),
      ...s3Env(minio, await createBucket(minio)),
      LOG_LEVEL: 'error',
    };
    // Latency is measured with the upload limits out of the way (they would refuse, not slow down):
    // the byte budget, and the count caps of builds before it (for A/B runs with --bin).
    const uncapped = {
      HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '100000',
      HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '100000',
      HOSTPLANE_UPLOADS_MAX_CONCURRENT: '1000',
      HOSTPLANE_UPLOADS_MAX_PER_SITE: '1000',
    };
    server = await serve({ ...env, ...uncapped });
    const created = await server.createSite('bench');
    const headers = { 'x-api-key': created.apiKey, 'content-type': 'application/json' };
    const siteHeaders = [headers];
    for (const n of [2, 3, 4, 5]) {
      const { apiKey } = await server.createSite(`bench${n}`);
      siteHeaders.push({ 'x-api-key': apiKey, 'content-type': 'application/json' });
    }

    // Round trips: sequential uploads, so every query counted belongs to one of them.
    const roundTrips = async (size: number, label: string, overwrite: boolean) => {
      const next = uploadBodies(size, label);
      const samples: number[] = [];
      for (let i = 0; i < 10; i++) {
        const body = overwrite ? next() : next().replace(`"path":"${label}-`, `"path":"${label}-new${i}-`);
        const before = proxy.count();
        const res = await request(server!.port, 'POST', '/api/v1/files/upload', headers, body);
        if (res.status !== 200) throw new Error(`upload → ${res.status} ${res.body}`);
        samples.push(proxy.count() - before);
      }
      return Math.max(...samples.slice(2));
    };
    // Warm-up (connections opened, code paths compiled), not counted.
    await latency(server.port, headers, 40, uploadBodies(1 * KB, 'warm'));
    const result = {
      bin: path.relative(process.cwd(), bin),
      roundTrips: {
        newFile1KB: await roundTrips(1 * KB, 'rt-new', false),
        overwrite1KB: await roundTrips(1 * KB, 'rt', true),
        nestedNewFile1KB: await roundTrips(1 * KB, 'a/b/rt', false),
      },
      latency1KB: await latency(server.port, headers, SMALL_REQUESTS, uploadBodies(1 * KB, 'small')),
      latency5MB: await latency(server.port, headers, LARGE_REQUESTS, uploadBodies(5 * MB, 'large')),
      commitTransactionMeanMs: await commitTransactionMs(server.metricsPort!),
      burst: {} as Record<string, unknown>,
      burstFiveSites: {} as Record<string, unknown>,
      burstUncapped: {} as Record<string, unknown>,
    };
    log(`round trips per upload: ${JSON.stringify(result.roundTrips)}`);
    log(`1 KB: ${JSON.stringify(result.latency1KB)}`);
    log(`5 MB: ${JSON.stringify(result.latency5MB)}`);
    log(`upload transaction (site lock held), mean: ${result.commitTransactionMeanMs} ms`);

    // Peak RSS: a fresh server process, then 20 uploads of 10 MB at once; with the caps as
    // configured (the build's defaults unless HOSTPLANE_UPLOADS_* are set), then with none.
    await server.stop();
    if (values['latency-only']) return void (values.json && console.log(JSON.stringify(result)));
    result.burst = await burst(env, [headers]);
    log(`20 × 10 MB at once to one site, caps as configured: ${JSON.stringify(result.burst)}`);
    result.burstFiveSites = await burst(env, siteHeaders);
    log(`20 × 10 MB at once to five sites, caps as configured: ${JSON.stringify(result.burstFiveSites)}`);
    result.burstUncapped = await burst({ ...env, ...uncapped }, [headers]);
    log(`20 × 10 MB at once, no caps: ${JSON.stringify(result.burstUncapped)}`);
    if (values.json) console.log(JSON.stringify(result));
  } finally {
    await server?.stop();
    await proxy.close();
    await Promise.all([postgres.stop(), minio.stop()]);
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
