#!/usr/bin/env node
// Start-up time of `hostplane serve` on embedded defaults: from spawning the built binary to the
// first 200 on /healthz, on a fresh data dir (nothing in it) and on a warm one (a data dir a
// previous run created and stopped cleanly). Prints min / median / max of each; see README.md.
//
//   node bench/startup/run.mjs [--runs N] [--bin dist/src/cli/main.js] [--json]
/* global process, console, performance, setTimeout -- Node globals; the ESLint config has none for .mjs */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    json: { type: 'boolean', default: false },
    'timeout-ms': { type: 'string', default: '60000' },
  },
});
const runs = Number(values.runs);
const bin = path.resolve(values.bin);
const timeoutMs = Number(values['timeout-ms']);
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive integer');
if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function healthz(port) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.setTimeout(1000, () => req.destroy());
  });
}

/** Starts `serve` on dataDir, returns ms to the first 200 on /healthz, then stops it (SIGTERM). */
async function timeStart(dataDir) {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      HOSTPLANE_DATA_DIR: dataDir,
      HOSTPLANE_METRICS_PORT: '0',
      HOSTPLANE_BASE_URL: `http://localhost:${port}`,
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
      S3_BUCKET: '',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  let elapsed;
  let failure;
  // Poll often: the figure is only as fine as the polling interval.
  while (elapsed === undefined && failure === undefined) {
    if (await healthz(port)) elapsed = performance.now() - t0;
    else if (child.exitCode !== null) failure = `serve exited with ${child.exitCode}`;
    else if (performance.now() - t0 > timeoutMs) failure = `no 200 on /healthz in ${timeoutMs} ms`;
    else await new Promise((r) => setTimeout(r, 5));
  }
  child.kill('SIGTERM');
  const code = await exited;
  // null: SIGTERM arrived before serve installed its handlers (an early 200), which is fine here.
  if (failure === undefined && code !== 0 && code !== null) failure = `serve exited with ${code} on SIGTERM`;
  if (failure !== undefined) throw new Error(`${failure}:\n${stderr}`);
  return elapsed;
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { min: s[0], median: mid, max: s[s.length - 1] };
};

const root = await mkdtemp(path.join(os.tmpdir(), 'hostplane-bench-startup-'));
try {
  const fresh = [];
  const warm = [];
  for (let i = 0; i < runs; i++) {
    // Fresh then warm on the same dir: the warm run reuses what the fresh one created.
    const dataDir = path.join(root, `run-${i}`);
    fresh.push(await timeStart(dataDir));
    warm.push(await timeStart(dataDir));
  }
  const result = { runs, fresh: stats(fresh), warm: stats(warm) };
  if (values.json) {
    console.log(JSON.stringify(result));
  } else {
    const ms = (x) => `${Math.round(x)} ms`.padStart(8);
    console.log(`hostplane serve, start to first 200 on /healthz (${runs} runs each)`);
    console.log(`           min   median      max`);
    for (const kind of ['fresh', 'warm']) {
      const { min, median, max } = result[kind];
      console.log(`${kind.padEnd(6)}${ms(min)} ${ms(median)} ${ms(max)}`);
    }
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
