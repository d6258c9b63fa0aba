// The edge beyond cache hits, on the cluster back-ends (PostgreSQL + MinIO, started like the tests
// start them): the cache-miss path (first request after an upload), a 20 MB video served whole
// and by Range against nginx (from the edge's disk cache, and from MinIO with that cache off), and
// the edge's memory under 10,000 distinct cached paths.
// Run through bench/edge/run.sh (after the cache-hit table); needs `bash test/tools/build.sh`.
// Environment: BENCH_PIN (1), BENCH_MISSES (300), BENCH_PATHS (10000), BENCH_CACHE_MB (16),
// BENCH_DISK_CACHE_MB (the server's default), BENCH_VIDEO_SECONDS (5), BENCH_VIDEO_BASELINE (1:
// also measure a second Hostplane with the disk cache off), BENCH_HOSTPLANE_MAIN (another build).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBucket, startMinio } from '../../test/support/minio.js';
import { createDatabase, startPostgres } from '../../test/support/postgres.js';
import { freePort, terminate } from '../../test/support/procs.js';
import { runCli, s3Env, startServer } from '../support/server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const env = (name: string, fallback: number) => Number(process.env[name] || fallback);
const MISSES = env('BENCH_MISSES', 300);
const PATHS = env('BENCH_PATHS', 10_000);
const CACHE_MB = env('BENCH_CACHE_MB', 16);
const VIDEO_SECONDS = env('BENCH_VIDEO_SECONDS', 5);
const VIDEO_BASELINE = process.env.BENCH_VIDEO_BASELINE !== '0';
const VIDEO_ROUNDS = env('BENCH_VIDEO_ROUNDS', 3);
const cpus = os.availableParallelism();
const PIN = process.env.BENCH_PIN !== '0' && cpus >= 2 && spawnSync('taskset', ['-V']).status === 0;
const pinned = (cmd: string, args: string[]): [string, string[]] =>
  PIN ? ['taskset', ['-c', String(cpus - 1), cmd, ...args]] : [cmd, args];
if (PIN) spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hostplane-bench-extra-'));
const children: ChildProcess[] = [];
const stops: Array<() => Promise<void>> = [];

function request(
  port: number,
  host: string,
  urlPath: string,
  init: { method?: string; headers?: Record<string, string>; body?: Buffer } = {},
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: urlPath,
        method: init.method ?? 'GET',
        headers: { host, ...init.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
/** CPU seconds (user + system) a process has used, from /proc (clock ticks of 1/100 s). */
const cpuSeconds = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

/** wrk for `seconds` with `connections`; returns req/s and transfer MB/s. */
function wrk(
  port: number,
  host: string,
  urlPath: string,
  seconds: number,
  connections: number,
  headers: string[] = [],
) {
  const args = [
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '-H',
    `Host: ${host}`,
    ...headers.flatMap((h) => ['-H', h]),
  ];
  const out = spawnSync('wrk', [...args, `http://127.0.0.1:${port}${urlPath}`], { encoding: 'utf8' }).stdout;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const t = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(out);
  const mbps = t ? (Number(t[1]) * { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[t[2] as 'B']) / 1e6 : NaN;
  if (/Non-2xx/.test(out)) console.log(`  warning: non-2xx answers:\n${out}`);
  return { rps, mbps };
}

async function startNginx(docroot: string): Promise<{ port: number; pid: number }> {
  const port = await freePort();
  const dir = path.join(tmp, 'nginx');
  fs.mkdirSync(dir, { recursive: true });
  const conf = `${process.getuid?.() === 0 ? 'user root;' : ''}
daemon off; master_process off; worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  types { video/mp4 mp4; } default_type application/octet-stream;
  access_log off; sendfile on; tcp_nopush on; keepalive_requests 10000000;
  client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  server { listen 127.0.0.1:${port}; root ${docroot}; }
}`;
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const bin = process.env.NGINX_BIN || 'nginx';
  const child = spawn(...pinned(bin, ['-e', `${dir}/error.log`, '-p', dir, '-c', `${dir}/nginx.conf`]), {
    stdio: 'ignore',
  });
  children.push(child);
  for (let i = 0; i < 100; i++) {
    if ((await request(port, 'x', '/').catch(() => ({ status: 0 }))).status !== 0)
      return { port, pid: child.pid ?? 0 };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('nginx did not start');
}

async function main() {
  const [pg, minio] = await Promise.all([startPostgres(), startMinio()]);
  stops.push(
    () => pg.stop(),
    () => minio.stop(),
  );
  const main = process.env.BENCH_HOSTPLANE_MAIN
    ? path.resolve(process.env.BENCH_HOSTPLANE_MAIN)
    : path.join(root, 'dist/src/cli/main.js');
  /** A Hostplane on its own database and bucket, with site `extra`. */
  const startHostplane = async (name: string, extraEnv: NodeJS.ProcessEnv = {}) => {
    const hpEnv: NodeJS.ProcessEnv = {
      HOSTPLANE_EDGE_CACHE_MB: String(CACHE_MB),
      HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '1024',
      HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '1024',
      DATABASE_URL: await createDatabase(pg.url),
      ...s3Env(minio, await createBucket(minio)),
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      // Tracing export would add per-request work that is not the edge: keep it off.
      OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
      ...(process.env.BENCH_DISK_CACHE_MB
        ? { HOSTPLANE_EDGE_DISK_CACHE_MB: process.env.BENCH_DISK_CACHE_MB }
        : {}),
      ...extraEnv,
    };
    const dataDir = path.join(tmp, `data-${name}`);
    await runCli(main, ['migrate'], { ...process.env, ...hpEnv, HOSTPLANE_DATA_DIR: dataDir });
    const server = await startServer({
      bin: main,
      name,
      env: hpEnv,
      dataDir,
      localhostUrls: true,
      serveArgs: ['--role', 'all'],
      wrap: pinned,
      output: 'ignore',
    });
    stops.unshift(() => server.stop());
    const { apiKey } = await server.createSite('extra', 'extra@example.com');
    return { server, port: server.port, apiKey, site: `extra.localhost:${server.port}` };
  };
  const { server: hp, port, apiKey, site } = await startHostplane('edge-extra');
  const api = `localhost:${port}`;
  const uploadText = async (p: string, content: string) => {
    const res = await request(port, api, '/api/v1/files/upload', {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ path: p, content })),
    });
    if (res.status !== 200) throw new Error(`upload ${p}: ${res.status} ${res.body.toString()}`);
  };
  console.log(
    `extra: Hostplane on PostgreSQL + MinIO${PIN ? `, pinned to CPU ${cpus - 1}` : ''}; load ${(os.loadavg()[0] ?? 0).toFixed(2)}`,
  );

  // 1. The cache-miss path: the first GET after each upload (manifest miss → PostgreSQL, bytes → MinIO).
  const page = (i: number) => `<!doctype html><p>miss ${i}</p>${'x'.repeat(2000)}`;
  const misses: number[] = [];
  for (let i = 0; i < MISSES; i++) {
    await uploadText(`miss/${i}.html`, page(i));
    const t0 = performance.now();
    const res = await request(port, site, `/miss/${i}.html`);
    misses.push(performance.now() - t0);
    if (res.status !== 200 || res.body.toString() !== page(i)) throw new Error(`miss ${i}: ${res.status}`);
  }
  const hits: number[] = [];
  for (let i = 0; i < MISSES; i++) {
    const t0 = performance.now();
    await request(port, site, `/miss/${i}.html`);
    hits.push(performance.now() - t0);
  }
  misses.sort((a, b) => a - b);
  hits.sort((a, b) => a - b);
  const ms = (n: number) => n.toFixed(2);
  console.log(
    `cache miss (first GET after an upload, ${MISSES} files, one at a time, new connection each): p50 ${ms(percentile(misses, 50))} ms, p99 ${ms(percentile(misses, 99))} ms; ` +
      `the same GET again (hit): p50 ${ms(percentile(hits, 50))} ms, p99 ${ms(percentile(hits, 99))} ms`,
  );

  // 2. A 20 MB video, whole and by 1 MB ranges, against nginx serving the same bytes from disk:
  // the edge from its disk cache (filled by the first GET), and, for comparison, a second edge with
  // the disk cache off (every request streamed from MinIO).
  const video = randomBytes(20 * 1024 * 1024);
  const docroot = path.join(tmp, 'www');
  fs.mkdirSync(docroot);
  fs.writeFileSync(path.join(docroot, 'video.mp4'), video);
  const uploadVideo = async (to: { port: number; apiKey: string }) => {
    const boundary = `----bench${randomBytes(8).toString('hex')}`;
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="path"\r\n\r\nvideo.mp4\r\n`),
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="v.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
      ),
      video,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const up = await request(to.port, `localhost:${to.port}`, '/api/v1/videos/upload', {
      method: 'POST',
      headers: { 'x-api-key': to.apiKey, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    if (up.status !== 200) throw new Error(`video upload: ${up.status} ${up.body.toString()}`);
  };
  await uploadVideo({ port, apiKey });
  const nginx = await startNginx(docroot);
  const servers: Array<{ label: string; port: number; host: string; pid: number }> = [
    { label: 'hostplane', port, host: site, pid: hp.pid },
  ];
  if (VIDEO_BASELINE) {
    const off = await startHostplane('edge-extra-off', { HOSTPLANE_EDGE_DISK_CACHE_MB: '0' });
    await uploadVideo(off);
    servers.push({ label: 'hostplane, disk cache off', port: off.port, host: off.site, pid: off.server.pid });
  }
  for (const s of servers) {
    const check = await request(s.port, s.host, '/video.mp4');
    if (!check.body.equals(video)) throw new Error(`${s.label} served other bytes for the video`);
  }
  const rssBefore = rssMb(hp.pid);
  // Rounds alternate nginx and each Hostplane, so a burst of other work on the machine hits them
  // alike; the medians of req/s and of each round's ratio are printed, and requests per server
  // CPU-second over all rounds (steadier than req/s on a busy machine).
  const rows: string[] = [];
  const measure = (
    target: { port: number; host: string; pid: number },
    headers: string[],
    connections: number,
  ) => {
    const cpu0 = cpuSeconds(target.pid);
    const r = wrk(target.port, target.host, '/video.mp4', VIDEO_SECONDS, connections, headers);
    return { ...r, cpu: cpuSeconds(target.pid) - cpu0 };
  };
  for (const [label, headers, connections] of [
    ['whole 20 MB file', [], 4],
    ['1 MB range (bytes=8388608-9437183)', ['Range: bytes=8388608-9437183'], 8],
  ] as const) {
    const nginxRuns: Array<ReturnType<typeof measure>> = [];
    const hpRuns = servers.map(() => [] as Array<ReturnType<typeof measure>>);
    for (let round = 0; round < VIDEO_ROUNDS; round++) {
      nginxRuns.push(measure({ ...nginx, host: 'localhost' }, [...headers], connections));
      servers.forEach((s, i) => hpRuns[i]!.push(measure(s, [...headers], connections)));
    }
    const perCpu = (runs: Array<ReturnType<typeof measure>>) =>
      runs.reduce((n, r) => n + r.rps * VIDEO_SECONDS, 0) / runs.reduce((n, r) => n + r.cpu, 0);
    const n = { rps: median(nginxRuns.map((r) => r.rps)), mbps: median(nginxRuns.map((r) => r.mbps)) };
    const cells = servers.map((s, i) => {
      const runs = hpRuns[i]!;
      const ratio = median(runs.map((r, k) => r.rps / nginxRuns[k]!.rps));
      return (
        `${s.label} ${median(runs.map((r) => r.rps)).toFixed(1)} req/s, ${median(runs.map((r) => r.mbps)).toFixed(0)} MB/s: ` +
        `${ratio.toFixed(2)}× nginx (per CPU-s ${(perCpu(runs) / perCpu(nginxRuns)).toFixed(2)}×)`
      );
    });
    rows.push(`${label}: nginx ${n.rps.toFixed(1)} req/s, ${n.mbps.toFixed(0)} MB/s; ${cells.join('; ')}`);
  }
  const rssAfter = rssMb(hp.pid);
  console.log(
    `video (wrk, median of ${VIDEO_ROUNDS} alternating rounds of ${VIDEO_SECONDS} s; nginx from disk with sendfile, Hostplane from its disk cache${VIDEO_BASELINE ? ' and, disk cache off, from MinIO' : ''}):\n  ${rows.join('\n  ')}\n` +
      `  RSS of the Hostplane with the disk cache: ${rssBefore.toFixed(0)} MB before the video runs, ${rssAfter.toFixed(0)} MB after`,
  );

  // 3. Memory under PATHS distinct cached paths (each its own ~2 KB bytes), cache bounded by HOSTPLANE_EDGE_CACHE_MB.
  const pid = hp.pid;
  const before = rssMb(pid);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < PATHS; i = next++)
        await uploadText(`many/${i}.css`, `.c${i}{}` + 'y'.repeat(2048));
    }),
  );
  const afterUploads = rssMb(pid);
  for (let round = 0; round < 2; round++) {
    next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = next++; i < PATHS; i = next++) await request(port, site, `/many/${i}.css`);
      }),
    );
  }
  const afterServing = rssMb(pid);
  console.log(
    `memory (RSS): ${before.toFixed(0)} MB before; ${afterUploads.toFixed(0)} MB after ${PATHS} uploads; ` +
      `${afterServing.toFixed(0)} MB after serving all ${PATHS} paths twice (~${((PATHS * 2.1) / 1024).toFixed(0)} MB of distinct bytes; ` +
      `blob cache bounded at HOSTPLANE_EDGE_CACHE_MB=${CACHE_MB}, path caches at 32 + 16 MB)`,
  );
}

async function cleanup() {
  for (const child of children) if (child.exitCode === null) await terminate(child, 'SIGTERM');
  for (const stop of stops) await stop().catch(() => undefined);
  fs.rmSync(tmp, { recursive: true, force: true });
}

main().then(
  () => cleanup().then(() => process.exit(0)),
  (err: unknown) => {
    console.error(`extra: ${(err as Error).stack ?? String(err)}`);
    void cleanup().then(() => process.exit(1));
  },
);
