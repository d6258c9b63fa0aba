// Paired rounds: two builds of Hostplane (A, a reference commit's dist; B, this checkout's) side by
// side on one machine in one sitting, the same wrk load alternating between them, so that a
// difference between two builds is told apart from the machine's drift (a shared machine's req/s
// moves by ±30 % within an hour; the ratio of two runs a few seconds apart moves far less).
//
//   scripts/node.sh exec npx tsx bench/support/paired.ts --a ../ref/dist/src/cli/main.js \
//     [--b dist/src/cli/main.js] [--case edge-20k|sqlite-insert|sqlite-read] [--rounds 5] \
//     [--seconds 5] [--warmup 3] [--cpu-prof-dir DIR] [--cpu-prof-interval µs] [--json] \
//     [--mode bare|session] [--pocketbase]
//
// Both servers start first and stay up (each idle while the other is measured); then each round
// runs wrk on A and on B, in the order A B in odd rounds and B A in even ones (so a steady drift of
// the machine weighs on both alike). Reported per round: each build's req/s and the server's CPU
// microseconds per request (/proc, all threads), and the round's ratio B / A; then the median
// ratio and the spread (lowest and highest round). A difference inside that spread is noise.
// With `--pocketbase` (SQLite cases) PocketBase runs beside them as a third side, measured in every
// round too (the three in turn, the order rotating each round), and each build's ratio to it is
// reported per round: before and after against PocketBase from one sitting. `--mode session`
// measures the user-session variant of bench/sqlite (both sides) instead of the bare token.
//
// Cases: edge-20k is bench/edge's style.css (20 KB, a cache hit of the edge, Host bench.localhost;
// the servers pinned to the last CPU and wrk to CPU 0, as bench/edge does); sqlite-insert and
// sqlite-read are bench/sqlite's single-row insert and point read with a bare scoped token, on
// PGlite with 10,000 rows (nothing pinned, as bench/sqlite). `--cpu-prof-dir` runs both servers
// under `node --cpu-prof` (a profile per build and thread in DIR/a and DIR/b) and prints a summary
// of each (bench/sqlite/profile.ts): use it with `--rounds 1` to see where time goes.
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { summarizeProfiles } from '../sqlite/profile.js';
import { cpuSeconds, startHostplane, startPocketbase, type Mode, type Server } from '../sqlite/servers.js';
import { request } from './http.js';
import { startServer, type BenchServer } from './server.js';

const execFileAsync = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));

const { values } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string', default: 'dist/src/cli/main.js' },
    case: { type: 'string', default: 'edge-20k' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '3' },
    'cpu-prof-dir': { type: 'string' },
    'cpu-prof-interval': { type: 'string' },
    json: { type: 'boolean', default: false },
    mode: { type: 'string', default: 'bare' },
    pocketbase: { type: 'boolean', default: false },
  },
});
const CASES = ['edge-20k', 'sqlite-insert', 'sqlite-read'] as const;
type Case = (typeof CASES)[number];
if (!values.a) throw new Error('--a: the reference build (its dist/src/cli/main.js)');
if (!CASES.includes(values.case as Case)) throw new Error(`--case: one of ${CASES.join(', ')}`);
if (!(Number(values.rounds) >= 1 && Number(values.rounds) <= 15)) throw new Error('--rounds: 1 to 15');
const theCase = values.case as Case;
if (values.mode !== 'bare' && values.mode !== 'session') throw new Error('--mode: bare or session');
const MODE = values.mode as Mode;
if (values.pocketbase && theCase === 'edge-20k') throw new Error('--pocketbase: with a SQLite case');
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);

/** A running build, and how wrk drives it. */
interface Side {
  label: 'a' | 'b' | 'p';
  bin: string;
  pid: number;
  wrkArgs: (seconds: number, prefix: string) => string[];
  stop(): Promise<void>;
}

const pinned = os.cpus().length >= 2 && theCase === 'edge-20k';
const SERVER_CPU = String(os.cpus().length - 1);

/** The 20 KB stylesheet of bench/edge (the same generator, so the same bytes). */
function css20k(): string {
  let out = '';
  for (let i = 0; out.length < 20 * 1024; i++)
    out += `.c${i} { margin: ${i % 17}px ${i % 13}px; color: #${((i * 2654435761) >>> 8).toString(16).padStart(6, '0').slice(0, 6)}; }\n`;
  return out.slice(0, 20 * 1024);
}

async function startEdge(label: 'a' | 'b', bin: string, nodeArgs: string[]): Promise<Side> {
  const server: BenchServer = await startServer({
    bin,
    name: `paired-${label}`,
    env: { LOG_LEVEL: 'warn', NODE_ENV: 'production' },
    localhostUrls: true,
    nodeArgs,
    serveArgs: ['--role', 'all'],
    runInDataDir: true,
    wrap: pinned ? (cmd, args) => ['taskset', ['-c', SERVER_CPU, cmd, ...args]] : undefined,
  });
  const { apiKey } = await server.createSite('bench');
  const content = css20k();
  const up = await request(
    server.port,
    'POST',
    '/api/v1/files/upload',
    { 'x-api-key': apiKey, 'content-type': 'application/json', host: `localhost:${server.port}` },
    JSON.stringify({ path: 'style.css', content }),
  );
  if (up.status !== 200) throw new Error(`upload (${label}): ${up.status} ${up.body}`);
  const host = `bench.localhost:${server.port}`;
  const got = await request(server.port, 'GET', '/style.css', { host });
  if (got.status !== 200 || got.body !== content) throw new Error(`GET /style.css (${label}): ${got.status}`);
  return {
    label,
    bin,
    pid: server.pid,
    wrkArgs: (seconds) => [
      '-t1',
      '-c50',
      `-d${seconds}s`,
      '-H',
      `Host: ${host}`,
      `http://127.0.0.1:${server.port}/style.css`,
    ],
    stop: () => server.stop(),
  };
}

async function startSqlite(label: 'a' | 'b' | 'p', bin: string, nodeArgs: string[]): Promise<Side> {
  const server: Server =
    label === 'p'
      ? await startPocketbase({ repo: path.resolve(here, '../..'), rows: 10_000 })
      : await startHostplane({ bin, backend: 'pglite', rows: 10_000, nodeArgs });
  const target = server.targets[MODE];
  const op = theCase === 'sqlite-insert' ? 'insert' : 'read';
  return {
    label,
    bin,
    pid: server.pid,
    wrkArgs: (seconds, prefix) => [
      '-t1',
      '-c32',
      '--timeout',
      '10s',
      `-d${seconds}s`,
      '-s',
      path.join(here, '../sqlite/load.lua'),
      `http://127.0.0.1:${target.port}`,
      '--',
      op,
      target.name,
      '10000',
      prefix,
      ...target.luaArgs,
    ],
    stop: () => server.stop(),
  };
}

/** One wrk run: req/s, and the server's CPU µs per request over it. */
async function run(side: Side, seconds: number, prefix: string) {
  const cpu0 = cpuSeconds(side.pid);
  const args = side.wrkArgs(seconds, prefix);
  const [cmd, argv] = pinned ? ['taskset', ['-c', '0', 'wrk', ...args]] : ['wrk', args];
  const { stdout } = await execFileAsync(cmd, argv as string[], { maxBuffer: 1 << 24 });
  const cpu = cpuSeconds(side.pid) - cpu0;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1]);
  if (/Non-2xx/.test(stdout) || !rps) throw new Error(`wrk on ${side.label}: ${stdout}`);
  return { reqPerSec: Math.round(rps), cpuUsPerRequest: Number(((cpu * 1e6) / requests).toFixed(1)) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return Number(m.toFixed(3)); // no 1.5365000000000002 in the report
};

async function main() {
  const profDir = values['cpu-prof-dir'] ? path.resolve(values['cpu-prof-dir']) : undefined;
  const start = theCase === 'edge-20k' ? startEdge : startSqlite;
  const sides: Side[] = [];
  try {
    for (const [label, bin] of [
      ['a', values.a!],
      ['b', values.b],
    ] as const) {
      const dir = profDir && path.join(profDir, label);
      if (dir) await mkdir(dir, { recursive: true });
      const interval = values['cpu-prof-interval'];
      const profArgs = dir
        ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...(interval ? [`--cpu-prof-interval=${interval}`] : [])]
        : [];
      sides.push(await start(label, path.resolve(bin), profArgs));
    }
    if (values.pocketbase) sides.push(await startSqlite('p', 'pocketbase', []));
    const [a, b, p] = sides as [Side, Side, Side | undefined];
    // Insert ids (bench/sqlite/load.lua: one prefix letter): "v" for the warm-up, then one letter
    // per round from "g" on, so no round repeats an id (each build has its own table).
    for (const side of sides) await run(side, Number(values.warmup), 'v');
    type Result = Awaited<ReturnType<typeof run>>;
    const rounds: Array<{
      round: number;
      order: string;
      a: Result;
      b: Result;
      ratio: number;
      cpuRatio: number;
      load1: number;
      p?: Result;
      aToP?: number;
      bToP?: number;
      cpuPToA?: number;
      cpuPToB?: number;
    }> = [];
    for (let r = 1; r <= ROUNDS; r++) {
      const pair = r % 2 ? [a, b] : [b, a];
      // With PocketBase: the three in turn, each in every position over three rounds.
      const order = p ? [a, b, p, a, b].slice((r - 1) % 3, ((r - 1) % 3) + 3) : pair;
      const got: Record<string, Awaited<ReturnType<typeof run>>> = {};
      for (const side of order) got[side.label] = await run(side, SECONDS, String.fromCharCode(0x66 + r));
      const round = {
        round: r,
        order: order.map((s) => s.label).join(''),
        a: got.a!,
        b: got.b!,
        ratio: Number((got.b!.reqPerSec / got.a!.reqPerSec).toFixed(3)),
        cpuRatio: Number((got.b!.cpuUsPerRequest / got.a!.cpuUsPerRequest).toFixed(3)),
        load1: Number(os.loadavg()[0]!.toFixed(2)),
        ...(got.p && {
          p: got.p,
          aToP: Number((got.a!.reqPerSec / got.p.reqPerSec).toFixed(3)),
          bToP: Number((got.b!.reqPerSec / got.p.reqPerSec).toFixed(3)),
          // How many times A's and B's CPU per request PocketBase spends (the steadier measure).
          cpuPToA: Number((got.p.cpuUsPerRequest / got.a!.cpuUsPerRequest).toFixed(3)),
          cpuPToB: Number((got.p.cpuUsPerRequest / got.b!.cpuUsPerRequest).toFixed(3)),
        }),
      };
      rounds.push(round);
      if (!values.json) console.error(`  round ${r}: ${JSON.stringify(round)}`);
    }
    const ratios = rounds.map((r) => r.ratio);
    const cpuRatios = rounds.map((r) => r.cpuRatio);
    const toP = (key: 'aToP' | 'bToP' | 'cpuPToA' | 'cpuPToB') => {
      const xs = rounds.flatMap((r) => (r[key] === undefined ? [] : [r[key]]));
      return xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) } : undefined;
    };
    const report = {
      case: theCase,
      mode: MODE,
      a: a.bin,
      b: b.bin,
      seconds: SECONDS,
      pinned,
      rounds,
      medianReqPerSec: {
        a: median(rounds.map((r) => r.a.reqPerSec)),
        b: median(rounds.map((r) => r.b.reqPerSec)),
      },
      ratio: { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) },
      pocketbase: p && {
        aToP: toP('aToP'),
        bToP: toP('bToP'),
        cpuPToA: toP('cpuPToA'),
        cpuPToB: toP('cpuPToB'),
        medianReqPerSec: median(rounds.map((r) => r.p!.reqPerSec)),
      },
      cpuPerRequestRatio: {
        median: median(cpuRatios),
        min: Math.min(...cpuRatios),
        max: Math.max(...cpuRatios),
      },
    };
    if (values.json) console.log(JSON.stringify(report, null, 2));
    else {
      console.log(`\npaired ${theCase} (${MODE}): ${ROUNDS} rounds of ${SECONDS} s, A ${a.bin}, B ${b.bin}`);
      console.log(
        '| round | order | A req/s | B req/s | B / A | A CPU µs/req | B CPU µs/req | B / A (CPU per req) | load |',
      );
      console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
      for (const r of rounds)
        console.log(
          `| ${r.round} | ${r.order} | ${r.a.reqPerSec} | ${r.b.reqPerSec} | ${r.ratio} | ${r.a.cpuUsPerRequest} | ${r.b.cpuUsPerRequest} | ${r.cpuRatio} | ${r.load1} |` +
            (r.p
              ? ` PocketBase ${r.p.reqPerSec} req/s, ${r.p.cpuUsPerRequest} CPU µs/req; A / PB ${r.aToP}, B / PB ${r.bToP}`
              : ''),
        );
      console.log(
        `B / A req/s: median ${report.ratio.median}, rounds ${report.ratio.min}–${report.ratio.max}; ` +
          `CPU per request: median ${report.cpuPerRequestRatio.median}, rounds ${report.cpuPerRequestRatio.min}–${report.cpuPerRequestRatio.max}`,
      );
      const pb = report.pocketbase;
      const span = (x?: { median: number; min: number; max: number }) =>
        x ? `median ${x.median} (${x.min}–${x.max})` : '-';
      if (pb)
        console.log(
          `against PocketBase, req/s: A ${span(pb.aToP)}, B ${span(pb.bToP)}; ` +
            `PocketBase's CPU per request ÷ the build's: A ${span(pb.cpuPToA)}, B ${span(pb.cpuPToB)}`,
        );
    }
  } finally {
    await Promise.all(sides.map((s) => s.stop()));
  }
  if (profDir) {
    for (const label of ['a', 'b'])
      console.log(
        `\n${label} CPU profile (self time):\n${await summarizeProfiles(path.join(profDir, label))}`,
      );
  }
}

await main();
