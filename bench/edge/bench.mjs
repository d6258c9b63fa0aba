// Edge cache-hit throughput: Hostplane (one Node process, role all) against nginx (one worker)
// serving the same files, and against a bare `node:http` server answering the same bytes from memory
// (bare-node.mjs: the runtime's own ceiling), each pinned to the same CPU, loaded by wrk (one thread)
// from the other CPU.
// Run through bench/edge/run.sh (it installs nginx, builds dist/ and cleans up); see README.md.
//
// Environment (all optional):
//   BENCH_TMPDIR        working directory (default: a new temp dir, removed at the end)
//   NGINX_BIN           nginx binary (default: `nginx` on PATH, then /usr/sbin/nginx)
//   BENCH_DURATION      seconds measured per target and file (default 10)
//   BENCH_WARMUP        seconds of warm-up per target and file, not measured (default 2)
//   BENCH_CONNECTIONS   concurrent keep-alive connections (default 50)
//   BENCH_LOG_LEVEL     Hostplane LOG_LEVEL (default warn, so 2xx request lines are not written)
//   BENCH_PIN           1 (default): pin servers to the last CPU and the load generator to the first
//   BENCH_CPU_PROF_DIR  when set, Hostplane runs with --cpu-prof and writes its profile there
//   BENCH_OUT           JSON results file (default bench/edge/.last-run.json)
//   BENCH_HOSTPLANE_MAIN  Hostplane entry point to run (default dist/src/cli/main.js; for A/B of another build)
/* global process, console, Buffer, setTimeout, clearTimeout -- Node globals; the ESLint config has none for .mjs */
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

const DURATION = positiveNumber('BENCH_DURATION', 10);
const WARMUP = positiveNumber('BENCH_WARMUP', 2);
const CONNECTIONS = positiveNumber('BENCH_CONNECTIONS', 50);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'warn';
const OUT = process.env.BENCH_OUT || path.join(here, '.last-run.json');
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF_DIR ? path.resolve(process.env.BENCH_CPU_PROF_DIR) : '';
const LOOPBACK = '127.0.0.1';
const WRK = process.env.WRK_BIN || 'wrk';
const SLUG = 'bench';

function positiveNumber(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Processes, clean-up and a watchdog, so the bench always stops by itself.

const children = new Set();
const ownTmp = !process.env.BENCH_TMPDIR;
const tmp = process.env.BENCH_TMPDIR
  ? path.resolve(process.env.BENCH_TMPDIR)
  : fs.mkdtempSync(path.join(os.tmpdir(), 'hostplane-bench-edge-'));
fs.mkdirSync(tmp, { recursive: true });

let cleanedUp = false;
function cleanup() {
  if (cleanedUp) return;
  cleanedUp = true;
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  if (ownTmp) fs.rmSync(tmp, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    console.error(`\nbench: ${signal}, stopping`);
    cleanup();
    process.exit(130);
  });
}
// Warm-up + measurement for 3 targets x 3 files, plus generous set-up time.
const watchdogMs = (9 * (DURATION + WARMUP) + 180) * 1000;
setTimeout(() => {
  console.error(`bench: still running after ${watchdogMs / 1000}s, giving up`);
  cleanup();
  process.exit(1);
}, watchdogMs).unref();

const cpuCount = os.availableParallelism?.() ?? os.cpus().length;
const hasTaskset = spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;
const PIN = process.env.BENCH_PIN !== '0' && hasTaskset && cpuCount >= 2;
const SERVER_CPU = cpuCount - 1;
const CLIENT_CPU = 0;
if (PIN) {
  // The load generator (this process) keeps off the servers' CPU.
  spawnSync('taskset', ['-a', '-p', '-c', String(CLIENT_CPU), String(process.pid)], { stdio: 'ignore' });
}

/** Spawns `cmd`, pinned to the server CPU when pinning; stdout/stderr go to a log file. */
function start(name, cmd, args, options = {}) {
  const logPath = path.join(tmp, `${name}.log`);
  const log = fs.openSync(logPath, 'a');
  const [file, argv] = PIN ? ['taskset', ['-c', String(SERVER_CPU), cmd, ...args]] : [cmd, args];
  const child = spawn(file, argv, { ...options, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  children.add(child);
  // run.sh kills these by pid if this process dies without cleaning up (e.g. SIGKILL).
  fs.appendFileSync(path.join(tmp, 'pids'), `${child.pid} ${name}\n`);
  child.logPath = logPath;
  child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.exited.then(({ code, signal }) => {
    if (!child.stopping) {
      console.error(`bench: ${name} exited unexpectedly (code ${code}, signal ${signal}); log:`);
      console.error(readTail(logPath));
      cleanup();
      process.exit(1);
    }
  });
  return child;
}

async function stop(child, signal = 'SIGTERM', graceMs = 15_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.stopping = true;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
  children.delete(child);
}

function readTail(file, bytes = 4000) {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.slice(-bytes);
  } catch {
    return '(no log)';
  }
}

/** CPU seconds used so far by a process and all its threads (/proc, Linux only). */
function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (Number(fields[11]) + Number(fields[12])) / clockTicks();
  } catch {
    return NaN;
  }
}
/** Busy CPU seconds of the whole machine so far (everything but idle and iowait), from /proc/stat. */
function machineBusySeconds() {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return (total - f[3] - f[4]) / clockTicks();
  } catch {
    return NaN;
  }
}

let ticks;
function clockTicks() {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** One HTTP request over loopback with an explicit Host header. */
function request(port, { method = 'GET', host, path: urlPath, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        host: LOOPBACK,
        port,
        method,
        path: urlPath,
        headers: {
          host,
          ...headers,
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
        agent: false,
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`timeout on ${method} ${urlPath}`)));
    req.on('error', reject);
    req.end(payload);
  });
}

async function waitFor(what, fn, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  let lastError;
  while (Date.now() < deadline) {
    try {
      if (await fn()) return;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} not ready after ${timeoutMs / 1000}s${lastError ? `: ${lastError.message}` : ''}`);
}

// ---------------------------------------------------------------------------------------------
// The files: typical small-site assets, deterministic so every run serves the same bytes.

function filler(targetBytes, line) {
  const lines = [];
  let size = 0;
  for (let i = 0; size < targetBytes; i++) {
    const l = line(i);
    lines.push(l);
    size += Buffer.byteLength(l) + 1;
  }
  return lines.join('\n');
}

function makeFiles() {
  const head = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hostplane edge bench</title>
<link rel="stylesheet" href="/style.css">
<script defer src="/app.js"></script>
</head>
<body>
<main>
`;
  const tail = `</main>
</body>
</html>
`;
  const body = filler(
    2048 - head.length - tail.length,
    (i) => `<p id="p${i}">Paragraph ${i} of the bench page.</p>`,
  );
  const html = `${head}${body}\n${tail}`;
  const css = filler(
    20 * 1024,
    (i) =>
      `.c${i} { margin: ${i % 17}px ${i % 13}px; color: #${((i * 2654435761) >>> 8).toString(16).padStart(6, '0').slice(0, 6)}; }`,
  );
  const js = filler(
    100 * 1024,
    (i) =>
      `export function f${i}(x) { return (x * ${i + 7}) ^ ${(i * 40503) & 0xffff}; } // ${i.toString(36)}`,
  );
  return [
    { path: 'index.html', url: '/', label: 'index.html (/)', content: html },
    { path: 'style.css', url: '/style.css', label: 'style.css', content: css },
    { path: 'app.js', url: '/app.js', label: 'app.js', content: js },
  ];
}

// ---------------------------------------------------------------------------------------------
// nginx: one process, one worker, files from disk, as close to a stock static config as fits.

async function startNginx(files) {
  const bin =
    process.env.NGINX_BIN ||
    spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' }).stdout.trim() ||
    '/usr/sbin/nginx';
  const dir = path.join(tmp, 'nginx');
  const docroot = path.join(dir, 'www');
  fs.mkdirSync(docroot, { recursive: true });
  for (const f of files) fs.writeFileSync(path.join(docroot, f.path), f.content);
  for (const t of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'])
    fs.mkdirSync(path.join(dir, `${t}_temp`));

  const port = await freePort();
  const isRoot = process.getuid?.() === 0;
  const conf = `# Generated by bench/edge/bench.mjs
${isRoot ? 'user root;' : ''}
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events {
  worker_connections 1024;
}
http {
  types {
    text/html html;
    text/css css;
    application/javascript js;
  }
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65;
  # nginx closes a keep-alive connection after 1000 requests by default; Node never does.
  keepalive_requests 10000000;
  client_body_temp_path ${dir}/client_body_temp;
  proxy_temp_path ${dir}/proxy_temp;
  fastcgi_temp_path ${dir}/fastcgi_temp;
  uwsgi_temp_path ${dir}/uwsgi_temp;
  scgi_temp_path ${dir}/scgi_temp;
  server {
    listen ${LOOPBACK}:${port};
    server_name _;
    root ${docroot};
    index index.html;
  }
}
`;
  const confPath = path.join(dir, 'nginx.conf');
  fs.writeFileSync(confPath, conf);
  // -e: keep start-up errors out of /var/log/nginx (nginx >= 1.19.5).
  const check = spawnSync(bin, ['-t', '-e', path.join(dir, 'error.log'), '-p', dir, '-c', confPath], {
    encoding: 'utf8',
  });
  if (check.status !== 0) throw new Error(`nginx -t failed:\n${check.stderr}`);
  const version =
    check.stderr.match(/nginx\/[\d.]+/)?.[0] ?? spawnSync(bin, ['-v'], { encoding: 'utf8' }).stderr.trim();
  const child = start('nginx', bin, ['-e', path.join(dir, 'error.log'), '-p', dir, '-c', confPath]);
  await waitFor(
    'nginx',
    async () => (await request(port, { host: `${LOOPBACK}:${port}`, path: '/' })).status === 200,
  );
  return {
    name: 'nginx',
    child,
    port,
    host: `${LOOPBACK}:${port}`,
    version: version.replace(/^nginx version: /, ''),
  };
}

// ---------------------------------------------------------------------------------------------
// Hostplane: `node dist/src/cli/main.js serve` (role all), embedded PGlite and a local blob folder.

async function startHostplane(files) {
  const main = process.env.BENCH_HOSTPLANE_MAIN
    ? path.resolve(process.env.BENCH_HOSTPLANE_MAIN)
    : path.join(root, 'dist/src/cli/main.js');
  if (!fs.existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
  const port = await freePort();
  const metricsPort = await freePort();
  const dataDir = path.join(tmp, 'hostplane-data');
  fs.mkdirSync(dataDir, { recursive: true });
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: LOOPBACK,
    HOSTPLANE_DATA_DIR: dataDir,
    // /metrics answers on its own port only (the cache counters are read there).
    HOSTPLANE_METRICS_PORT: String(metricsPort),
    HOSTPLANE_BASE_URL: `http://localhost:${port}`,
    HOSTPLANE_SITES_DOMAIN: 'localhost',
    LOG_LEVEL,
    NODE_ENV: 'production',
  };
  // Tracing export would add per-request work that is not the edge: keep it off.
  delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const nodeArgs = [];
  if (CPU_PROF_DIR) {
    fs.mkdirSync(CPU_PROF_DIR, { recursive: true });
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`);
  }
  const child = start('hostplane', process.execPath, [...nodeArgs, main, 'serve', '--role', 'all'], {
    env,
    cwd: root,
  });
  const apiHost = `localhost:${port}`;
  await waitFor(
    'hostplane',
    async () => (await request(port, { host: apiHost, path: '/healthz' })).status === 200,
  );

  // The admin CLI talks to the running server over its admin socket in the data dir.
  const created = spawnSync(
    process.execPath,
    [
      main,
      'admin',
      'create-site',
      '--slug',
      SLUG,
      '--email',
      'bench@example.com',
      '--plan',
      'enterprise',
      '--json',
    ],
    { env: { ...env, LOG_LEVEL: 'error' }, cwd: root, encoding: 'utf8', timeout: 60_000 },
  );
  if (created.status !== 0)
    throw new Error(`create-site failed (${created.status}):\n${created.stdout}\n${created.stderr}`);
  const apiKey = JSON.parse(created.stdout.trim().split('\n').pop()).apiKey;
  if (!apiKey) throw new Error(`create-site printed no apiKey: ${created.stdout}`);

  for (const f of files) {
    const res = await request(port, {
      method: 'POST',
      host: apiHost,
      path: '/api/v1/files/upload',
      headers: { 'x-api-key': apiKey },
      body: { path: f.path, content: f.content },
    });
    if (res.status !== 200) throw new Error(`upload ${f.path}: ${res.status} ${res.body.toString()}`);
  }
  return { name: 'hostplane', child, port, metricsPort, host: `${SLUG}.localhost:${port}`, apiHost };
}

// ---------------------------------------------------------------------------------------------
// A bare node:http server (bare-node.mjs), the same Node as Hostplane: the same bytes from memory
// with the edge's Content-Type and ETag, so the ratio to it shows what the edge adds to the runtime.

async function startBareNode(files, hp) {
  const dir = path.join(tmp, 'bare-node');
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const entries = [];
  for (const [i, f] of files.entries()) {
    // The edge's own answer gives the header values (the bytes are checked equal by verify()).
    const res = await request(hp.port, { host: hp.host, path: f.url });
    if (res.status !== 200) throw new Error(`hostplane ${f.url}: status ${res.status}`);
    const file = path.join(dir, `${i}.bin`);
    fs.writeFileSync(file, f.content);
    entries.push({ url: f.url, contentType: res.headers['content-type'], etag: res.headers.etag, file });
  }
  const configPath = path.join(dir, 'files.json');
  fs.writeFileSync(configPath, JSON.stringify({ host: LOOPBACK, port, files: entries }));
  const child = start('node-http', process.execPath, [path.join(here, 'bare-node.mjs'), configPath]);
  await waitFor(
    'bare node:http',
    async () => (await request(port, { host: `${LOOPBACK}:${port}`, path: '/' })).status === 200,
  );
  return { name: 'node', child, port, host: `${LOOPBACK}:${port}`, version: `node:http ${process.version}` };
}

/** Hostplane's edge cache counters, from /metrics (to show the measured runs were cache hits). */
async function edgeCacheCounters(hp) {
  const res = await request(hp.metricsPort, { host: `${LOOPBACK}:${hp.metricsPort}`, path: '/metrics' });
  const counts = {};
  for (const m of res.body.toString().matchAll(/^hostplane_edge_cache_events_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    counts[`${labels.cache}_${labels.result}`] = Number(m[2]);
  }
  return counts;
}

async function verify(target, file) {
  const res = await request(target.port, { host: target.host, path: file.url });
  if (res.status !== 200) throw new Error(`${target.name} ${file.url}: status ${res.status}`);
  if (!res.body.equals(Buffer.from(file.content))) {
    throw new Error(
      `${target.name} ${file.url}: body differs (${res.body.length} bytes, expected ${Buffer.byteLength(file.content)})`,
    );
  }
  const headerBytes = Object.entries(res.headers).reduce(
    (n, [k, v]) => n + k.length + String(v).length + 4,
    0,
  );
  return { contentType: res.headers['content-type'], headerBytes };
}

/** wrk's output → req/s, latency percentiles (ms) and error counts. */
function parseWrk(text) {
  const ms = (value, unit) => Number(value) * ({ us: 0.001, ms: 1, s: 1000, m: 60_000 }[unit] ?? NaN);
  const percentile = (p) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(text);
    return m ? ms(m[1], m[2]) : NaN;
  };
  const latencyLine = /^\s+Latency\s+([\d.]+)(us|ms|s|m)\s+([\d.]+)(us|ms|s|m)\s+([\d.]+)(us|ms|s|m)/m.exec(
    text,
  );
  const total = /^\s*(\d+) requests in ([\d.]+)(us|ms|s|m),\s+([\d.]+)(B|KB|MB|GB)/m.exec(text);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(text);
  const bytesUnit = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 };
  return {
    requests: total ? Number(total[1]) : NaN,
    seconds: total ? ms(total[2], total[3]) / 1000 : NaN,
    bytes: total ? Number(total[4]) * bytesUnit[total[5]] : NaN,
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN),
    latencyMs: {
      p50: percentile(50),
      p90: percentile(90),
      p99: percentile(99),
      mean: latencyLine ? ms(latencyLine[1], latencyLine[2]) : NaN,
      max: latencyLine ? ms(latencyLine[5], latencyLine[6]) : NaN,
    },
    errors: socket ? Number(socket[1]) + Number(socket[2]) + Number(socket[3]) : 0,
    timeouts: socket ? Number(socket[4]) : 0,
    non2xx: non2xx ? Number(non2xx[1]) : 0,
  };
}

/** CPU seconds of this process's waited-for children (wrk), from /proc/self/stat (cutime + cstime). */
function childrenCpuSeconds() {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / clockTicks();
  } catch {
    return NaN;
  }
}

/** One wrk run (one thread, CONNECTIONS keep-alive connections), on the load generator's CPU. */
function load(target, url, duration, headers = {}) {
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${duration}s`, '--latency', '-H', `Host: ${target.host}`];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(`http://${LOOPBACK}:${target.port}${url}`);
  return new Promise((resolve, reject) => {
    const child = spawn(WRK, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`wrk exited with ${code}:\n${out}`));
      else resolve({ ...parseWrk(out), raw: out });
    });
  });
}

async function measure(target, file) {
  await load(target, file.url, WARMUP);
  const cpuBefore = cpuSeconds(target.child.pid);
  const clientBefore = childrenCpuSeconds();
  const busyBefore = machineBusySeconds();
  const t0 = process.hrtime.bigint();
  const r = await load(target, file.url, DURATION);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuSeconds(target.child.pid) - cpuBefore;
  const clientCpu = childrenCpuSeconds() - clientBefore;
  const busy = machineBusySeconds() - busyBefore;
  const completed = r.requests;
  const bad = r.errors + r.timeouts + r.non2xx;
  return {
    requestsPerSecond: r.requestsPerSecond,
    requestsTotal: completed,
    latencyMs: r.latencyMs,
    throughputMBps: r.bytes / r.seconds / 1e6,
    errors: r.errors,
    timeouts: r.timeouts,
    non2xx: r.non2xx,
    ok: bad === 0,
    durationSeconds: r.seconds,
    serverCpuSeconds: cpu,
    serverCpuShare: cpu / wall,
    clientCpuShare: clientCpu / wall,
    // CPU the machine spent on anything but this server and wrk (other jobs, plus kernel
    // network time not charged to either process), in cores; high values make the run noisy.
    otherCpuCores: Math.max(0, (busy - cpu - clientCpu) / wall),
    requestsPerServerCpuSecond: completed / cpu,
  };
}

// ---------------------------------------------------------------------------------------------

function fmt(n, digits = 0) {
  return Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : 'n/a';
}
function pad(s, w, right = false) {
  s = String(s);
  return right ? s.padEnd(w) : s.padStart(w);
}

async function main() {
  const files = makeFiles();
  console.log(`bench: work dir ${tmp}`);
  console.log(
    `bench: ${CONNECTIONS} connections, pipelining 1, ${WARMUP}s warm-up + ${DURATION}s measured per target and file; ` +
      (PIN
        ? `servers pinned to CPU ${SERVER_CPU}, load generator to CPU ${CLIENT_CPU}`
        : `no CPU pinning (${hasTaskset ? `${cpuCount} CPU(s)` : 'taskset missing'})`),
  );

  const nginx = await startNginx(files);
  const hp = await startHostplane(files);
  const bare = await startBareNode(files, hp);
  console.log(
    `bench: ${nginx.version} on ${LOOPBACK}:${nginx.port}; Hostplane (LOG_LEVEL=${LOG_LEVEL}) on ${LOOPBACK}:${hp.port} as ${hp.host}; ` +
      `bare ${bare.version} on ${LOOPBACK}:${bare.port}`,
  );

  const rows = [];
  for (const file of files) {
    const size = Buffer.byteLength(file.content);
    const row = { file: file.label, path: file.url, bytes: size };
    for (const target of [hp, nginx, bare]) {
      const check = await verify(target, file);
      const before = target === hp ? await edgeCacheCounters(hp) : undefined;
      process.stdout.write(`bench: ${target.name} ${file.url} ... `);
      const m = await measure(target, file);
      if (target === hp) {
        // The warm-up's first request may miss; the counters are read around warm-up + measurement.
        const after = await edgeCacheCounters(hp);
        const delta = (k) => (after[k] ?? 0) - (before[k] ?? 0);
        m.edgeCache = {
          manifestHits: delta('manifest_hit'),
          manifestMisses: delta('manifest_miss'),
          blobHits: delta('blob_hit'),
          blobMisses: delta('blob_miss'),
        };
      }
      m.contentType = check.contentType;
      m.responseHeaderBytes = check.headerBytes;
      row[target.name] = m;
      console.log(
        `${fmt(m.requestsPerSecond)} req/s, p99 ${fmt(m.latencyMs.p99)} ms, server CPU ${fmt(m.serverCpuShare * 100)}%, wrk CPU ${fmt(m.clientCpuShare * 100)}%, other ${fmt(m.otherCpuCores, 2)} cores${m.ok ? '' : '  [ERRORS]'}`,
      );
    }
    row.ratio = row.hostplane.requestsPerSecond / row.nginx.requestsPerSecond;
    row.ratioPerCpuSecond = row.hostplane.requestsPerServerCpuSecond / row.nginx.requestsPerServerCpuSecond;
    row.ratioNode = row.hostplane.requestsPerSecond / row.node.requestsPerSecond;
    row.ratioNodePerCpuSecond =
      row.hostplane.requestsPerServerCpuSecond / row.node.requestsPerServerCpuSecond;
    row.ratioNodeToNginx = row.node.requestsPerSecond / row.nginx.requestsPerSecond;
    rows.push(row);
  }

  await stop(hp.child, 'SIGTERM');
  await stop(nginx.child, 'SIGQUIT');
  await stop(bare.child, 'SIGTERM');

  // ---- report
  const head = [
    pad('file', 16, true),
    pad('bytes', 8),
    pad('hostplane req/s', 16),
    pad('p99 ms', 7),
    pad('cpu', 5),
    pad('nginx req/s', 12),
    pad('p99 ms', 7),
    pad('cpu', 5),
    pad('ratio hp/nginx', 15),
    pad('per CPU-s', 9),
  ].join('  ');
  console.log('');
  console.log(head);
  console.log('-'.repeat(head.length));
  for (const r of rows) {
    console.log(
      [
        pad(r.file, 16, true),
        pad(fmt(r.bytes), 8),
        pad(fmt(r.hostplane.requestsPerSecond), 16),
        pad(fmt(r.hostplane.latencyMs.p99), 7),
        pad(`${fmt(r.hostplane.serverCpuShare * 100)}%`, 5),
        pad(fmt(r.nginx.requestsPerSecond), 12),
        pad(fmt(r.nginx.latencyMs.p99), 7),
        pad(`${fmt(r.nginx.serverCpuShare * 100)}%`, 5),
        pad(fmt(r.ratio, 2), 15),
        pad(fmt(r.ratioPerCpuSecond, 2), 9),
      ].join('  '),
    );
  }
  // The runtime's ceiling: the same files from a bare node:http server, measured in the same run.
  const nodeHead = [
    pad('file', 16, true),
    pad('bytes', 8),
    pad('node:http req/s', 16),
    pad('p99 ms', 7),
    pad('cpu', 5),
    pad('ratio hp/node', 14),
    pad('per CPU-s', 9),
    pad('ratio node/nginx', 17),
  ].join('  ');
  console.log('');
  console.log(nodeHead);
  console.log('-'.repeat(nodeHead.length));
  for (const r of rows) {
    console.log(
      [
        pad(r.file, 16, true),
        pad(fmt(r.bytes), 8),
        pad(fmt(r.node.requestsPerSecond), 16),
        pad(fmt(r.node.latencyMs.p99), 7),
        pad(`${fmt(r.node.serverCpuShare * 100)}%`, 5),
        pad(fmt(r.ratioNode, 2), 14),
        pad(fmt(r.ratioNodePerCpuSecond, 2), 9),
        pad(fmt(r.ratioNodeToNginx, 2), 17),
      ].join('  '),
    );
  }
  console.log('');
  console.log('ratio = Hostplane req/s / nginx req/s from this one run (1.00 = as fast as nginx).');
  console.log(
    `ratio hp/node = Hostplane req/s / req/s of a bare node:http server (${process.version}) answering the same bytes ` +
      "from memory with the same Content-Type, ETag and Content-Length, in this run: the runtime's own ceiling (target >= 0.85).",
  );
  console.log(
    'Fair single-core comparison: nginx with worker_processes 1 (master_process off) against one Node process ' +
      '(and the bare node:http server, one process)' +
      (PIN
        ? `, all pinned to CPU ${SERVER_CPU}; wrk runs on CPU ${CLIENT_CPU}.`
        : '; no CPU pinning in this run.'),
  );
  console.log(
    'cpu = server CPU time / wall time during the measured run. When nginx is well below 100%, wrk, not nginx, ' +
      'was the limit and the ratio flatters Hostplane; "per CPU-s" compares requests per server CPU-second instead.',
  );
  const busiest = Math.max(
    ...rows.flatMap((r) => [r.hostplane.otherCpuCores, r.nginx.otherCpuCores, r.node.otherCpuCores]),
  );
  if (busiest > 0.25) {
    console.log(
      `warning: other work used up to ${fmt(busiest, 2)} cores during the runs (see "other" above); ` +
        'req/s and p99 are noisy, run again on a quiet machine (requests per CPU-second hold up better).',
    );
  }
  for (const r of rows) {
    const c = r.hostplane.edgeCache;
    if (c && (c.manifestMisses > 1 || c.blobMisses > 1)) {
      console.log(
        `warning: ${r.file}: ${c.manifestMisses} manifest / ${c.blobMisses} blob cache misses during the run`,
      );
    }
  }
  const failed = rows.flatMap((r) =>
    ['hostplane', 'nginx', 'node'].filter((t) => !r[t].ok).map((t) => `${t} ${r.file}`),
  );
  if (failed.length) console.log(`warning: errors, timeouts or non-2xx answers in: ${failed.join(', ')}`);

  const result = {
    date: new Date().toISOString(),
    host: { cpus: cpuCount, cpuModel: os.cpus()[0]?.model, node: process.version, kernel: os.release() },
    settings: {
      connections: CONNECTIONS,
      pipelining: 1,
      warmupSeconds: WARMUP,
      durationSeconds: DURATION,
      pinned: PIN,
      serverCpu: PIN ? SERVER_CPU : null,
      hostplaneLogLevel: LOG_LEVEL,
    },
    nginx: {
      version: nginx.version,
      workerProcesses: 1,
      masterProcess: false,
      sendfile: true,
      accessLog: false,
    },
    hostplane: { role: 'all', processes: 1, store: 'pglite', blobs: 'fs' },
    node: {
      server: 'node:http',
      version: process.version,
      headers: ['Content-Type', 'ETag', 'Content-Length'],
    },
    results: rows,
  };
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  fs.writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`results: ${path.relative(process.cwd(), OUT) || OUT}`);
  if (CPU_PROF_DIR) console.log(`cpu profile: ${CPU_PROF_DIR}`);
  return failed.length ? 1 : 0;
}

main().then(
  (code) => {
    cleanup();
    process.exit(code);
  },
  (err) => {
    console.error(`bench: ${err.stack ?? err}`);
    cleanup();
    process.exit(1);
  },
);
