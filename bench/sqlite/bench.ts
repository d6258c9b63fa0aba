// Hostplane's SQLite API against PocketBase's records API, on the same machine, with the same load
// generator (wrk + load.lua) and the same table and rows: point reads by primary key
// (POST /api/v1/sqlite/query vs GET /api/collections/items/records/<id>) and single-row inserts
// (POST /api/v1/sqlite/exec vs POST /api/collections/items/records), each in two modes: "bare"
// (Hostplane's scoped token with requireUserAuth false, PocketBase's public rules) and "session"
// (requireUserAuth true plus an end user's X-Sqlite-User-Token, PocketBase's rules requiring an
// auth record plus its token). A benchmark, not a test: it reports req/s, p50/p99 and the ratios
// Hostplane / PocketBase per mode, and asserts only that every request succeeded and every
// acknowledged insert landed. See README.md.
//
//   make build && scripts/node.sh exec npx tsx bench/sqlite/bench.ts [--backend pglite|postgres]
//     [--rows 10000] [--seconds 15] [--warmup 5] [--connections 32] [--modes bare,session]
//     [--profile] [--no-ceiling] [--json]
//
// Hostplane is the built binary (`hostplane serve`, all roles) on PGlite by default, as it runs
// standalone; `--backend postgres` uses the test suite's throwaway PostgreSQL instead. PocketBase
// is built from test/tools/pocketbase on first use. `--profile` runs the Hostplane server under
// `node --cpu-prof` and prints where its time went. Beside them, unless `--no-ceiling`, the
// runtime's ceiling (bare.ts): a bare `node:http` server giving the same answers without doing
// anything, alone and with a worker round trip per call.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { BARE_VARIANTS, startBare, type BareVariant } from './bare.js';
import { summarizeProfiles } from './profile.js';
import {
  cpuSeconds,
  MODES,
  startHostplane,
  startPocketbase,
  type Mode,
  type Server,
  type Target,
} from './servers.js';

const execFileAsync = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');

const { values } = parseArgs({
  allowNegative: true,
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    backend: { type: 'string', default: 'pglite' },
    rows: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    modes: { type: 'string', default: MODES.join(',') },
    'max-load': { type: 'string', default: '1.5' },
    'max-wait': { type: 'string', default: '300' },
    profile: { type: 'boolean', default: false },
    ceiling: { type: 'boolean', default: true },
    json: { type: 'boolean', default: false },
  },
});
if (values.backend !== 'pglite' && values.backend !== 'postgres')
  throw new Error('--backend: pglite or postgres');
const ROWS = Number(values.rows);
const modes = values.modes.split(',').map((m) => m.trim()) as Mode[];
if (!modes.length || modes.some((m) => !MODES.includes(m)))
  throw new Error(`--modes: a comma-separated list of ${MODES.join(', ')}`);
const MODE_LABEL: Record<Mode, string> = { bare: 'bare token', session: 'user session' };

interface WrkResult {
  requests: number;
  durationUs: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  p50Us: number;
  p90Us: number;
  p99Us: number;
  maxUs: number;
}
interface Measured {
  target: Target['name'];
  mode: Mode;
  op: 'read' | 'insert';
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Socket errors and timeouts (10 s): reported, not fatal — a loaded machine can cause them. */
  socketErrors: number;
  /** Inserts acknowledged, warm-up included (the table must hold at least these new rows). */
  acknowledged: number;
  cpuSeconds: number;
  load1: number;
}

const load1 = () => os.loadavg()[0]!;

/** Waits (up to --max-wait seconds) for the machine's 1-minute load to drop below --max-load. */
async function quietMachine() {
  const deadline = Date.now() + Number(values['max-wait']) * 1000;
  while (load1() >= Number(values['max-load']) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
}

/** One wrk run (one thread: the other core stays for the server) against `target`. */
async function wrk(target: Target, op: 'read' | 'insert', seconds: number, idPrefix: string) {
  const { stdout } = await execFileAsync(
    'wrk',
    [
      '-t1',
      `-c${values.connections}`,
      '--timeout',
      '10s',
      `-d${seconds}s`,
      '-s',
      path.join(here, 'load.lua'),
      `http://127.0.0.1:${target.port}`,
      '--',
      op,
      target.name,
      String(ROWS),
      idPrefix,
      ...target.luaArgs,
    ],
    { maxBuffer: 1 << 24 },
  );
  const line = stdout.split('\n').find((l) => l.startsWith('WRK_RESULT '));
  if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
  const result = JSON.parse(line.slice('WRK_RESULT '.length)) as WrkResult;
  // A non-2xx answer is a mistake of the benchmark (or a broken server), never a figure to report.
  if (result.errors.status > 0)
    throw new Error(`${target.name} ${op}: ${result.errors.status} non-2xx answers`);
  return result;
}

async function measure(
  target: Target,
  op: 'read' | 'insert',
  warmPrefix: string,
  prefix: string,
  label: string = target.name,
): Promise<Measured> {
  const warm = await wrk(target, op, Number(values.warmup), warmPrefix);
  await quietMachine();
  const load = load1();
  const cpu0 = cpuSeconds(target.pid);
  const result = await wrk(target, op, Number(values.seconds), prefix);
  const measured: Measured = {
    target: target.name,
    mode: target.mode,
    op,
    reqPerSec: Math.round(result.requests / (result.durationUs / 1e6)),
    p50Ms: result.p50Us / 1000,
    p99Ms: result.p99Us / 1000,
    requests: result.requests,
    socketErrors: result.errors.connect + result.errors.read + result.errors.write + result.errors.timeout,
    acknowledged: op === 'insert' ? warm.requests + result.requests : 0,
    cpuSeconds: Number((cpuSeconds(target.pid) - cpu0).toFixed(2)),
    load1: Number(load.toFixed(2)),
  };
  if (!values.json) console.error(`  ${label} ${op}: ${JSON.stringify(measured)}`);
  return measured;
}

async function main() {
  const profileDir = values.profile
    ? await mkdtemp(path.join(os.tmpdir(), 'hostplane-bench-sqlite-prof-'))
    : '';
  const started = { uptime: (await execFileAsync('uptime')).stdout.trim() };
  console.error(`bench-sqlite: starting PocketBase and Hostplane (${values.backend}), ${ROWS} rows each`);
  const pocketbase = await startPocketbase({ repo, rows: ROWS });
  let hostplane: Server | undefined;
  const results: Measured[] = [];
  const ceiling: (Measured & { variant: BareVariant })[] = [];
  let profile = '';
  try {
    hostplane = await startHostplane({
      bin: path.resolve(values.bin),
      backend: values.backend as 'pglite' | 'postgres',
      rows: ROWS,
      nodeArgs: values.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    });
    for (const mode of modes) {
      const before = {
        hostplane: await hostplane.targets[mode].count(),
        pocketbase: await pocketbase.targets[mode].count(),
      };
      if (before.hostplane !== ROWS || before.pocketbase !== ROWS)
        throw new Error(`seeded (${mode}) ${JSON.stringify(before)}`);
    }
    // Insert ids: "v" for the warm-up, "w" for the measured run (unique per wrk thread and run;
    // each mode has a table of its own).
    for (const mode of modes) {
      for (const op of ['read', 'insert'] as const) {
        for (const server of [hostplane, pocketbase])
          results.push(await measure(server.targets[mode], op, 'v', 'w'));
      }
    }
    // The ceiling: the same calls (bare-token shape) answered by a server that does nothing else.
    if (values.ceiling) {
      for (const variant of BARE_VARIANTS) {
        const bare = await startBare(variant);
        try {
          const target: Target = {
            name: 'hostplane',
            mode: 'bare',
            ...bare,
            count: () => Promise.resolve(0),
          };
          for (const op of ['read', 'insert'] as const)
            ceiling.push({ variant, ...(await measure(target, op, 'v', 'w', `bare ${variant}`)) });
        } finally {
          await bare.stop();
        }
      }
    }
    // Every acknowledged insert (warm-up and measured) is in the table (requests still in flight
    // when wrk stops may have landed too, hence at least).
    for (const mode of modes) {
      for (const target of [hostplane.targets[mode], pocketbase.targets[mode]]) {
        const rows = await target.count();
        const expected =
          ROWS +
          results.find((r) => r.target === target.name && r.mode === mode && r.op === 'insert')!.acknowledged;
        if (rows < expected)
          throw new Error(`${target.name} (${mode}): ${rows} rows, expected at least ${expected}`);
        console.error(
          `  ${target.name} (${mode}): ${rows} rows after the runs (at least ${expected} expected)`,
        );
      }
    }
  } finally {
    await hostplane?.stop();
    await pocketbase.stop();
    if (profileDir) {
      profile = await summarizeProfiles(profileDir);
      // BENCH_KEEP_PROFILE=1 leaves the .cpuprofile files for Chrome's DevTools or speedscope.
      if (process.env.BENCH_KEEP_PROFILE === '1')
        console.error(`bench-sqlite: profiles kept in ${profileDir}`);
      else await rm(profileDir, { recursive: true, force: true });
    }
  }

  const get = (target: Target['name'], mode: Mode, op: Measured['op']) =>
    results.find((r) => r.target === target && r.mode === mode && r.op === op)!;
  const ratio = (mode: Mode, op: Measured['op']) =>
    Number((get('hostplane', mode, op).reqPerSec / get('pocketbase', mode, op).reqPerSec).toFixed(2));
  const report = {
    backend: values.backend,
    rows: ROWS,
    seconds: Number(values.seconds),
    connections: Number(values.connections),
    modes,
    results,
    ceiling: ceiling.map(({ variant, op, reqPerSec, p50Ms, p99Ms, cpuSeconds }) => ({
      variant,
      op,
      reqPerSec,
      p50Ms,
      p99Ms,
      cpuSeconds,
    })),
    ratios: Object.fromEntries(
      modes.map((mode) => [mode, { read: ratio(mode, 'read'), insert: ratio(mode, 'insert') }]),
    ),
    uptimeAtStart: started.uptime,
    uptimeAtEnd: (await execFileAsync('uptime')).stdout.trim(),
    node: process.version,
    cpus: os.cpus().length,
  };
  if (values.json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    const ms = (n: number) => n.toFixed(2);
    // Requests per CPU-second of the server: less sensitive than req/s to what else the machine runs.
    const perCpu = (m: Measured) => Math.round(m.requests / Math.max(m.cpuSeconds, 0.01));
    console.log(
      `\nbench-sqlite (Hostplane on ${values.backend}), ${ROWS} rows, wrk -t1 -c${values.connections} ${values.seconds}s`,
    );
    console.log(
      '| operation | mode | Hostplane req/s | p50 / p99 ms | PocketBase req/s | p50 / p99 ms | ratio | CPU s (H / P) | req per CPU-s (H / P) | ratio per CPU-s | load |',
    );
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const mode of modes) {
      for (const op of ['read', 'insert'] as const) {
        const h = get('hostplane', mode, op);
        const p = get('pocketbase', mode, op);
        console.log(
          `| ${op} | ${MODE_LABEL[mode]} | ${h.reqPerSec} | ${ms(h.p50Ms)} / ${ms(h.p99Ms)} | ${p.reqPerSec} | ${ms(p.p50Ms)} / ${ms(p.p99Ms)} | ${ratio(mode, op)} | ${h.cpuSeconds} / ${p.cpuSeconds} | ${perCpu(h)} / ${perCpu(p)} | ${(perCpu(h) / perCpu(p)).toFixed(2)} | ${h.load1} / ${p.load1} |`,
        );
      }
    }
    console.log(
      'bare token: Hostplane X-Sqlite-Token (requireUserAuth false) / PocketBase public rules; ' +
        'user session: plus X-Sqlite-User-Token of a logged-in end user / an auth record token with rules @request.auth.id != "".',
    );
    if (ceiling.length > 0) {
      // What Hostplane's bare-token calls reach of a server that only answers them (1.00: all).
      console.log(
        '\nruntime ceiling (same calls and answers, no checks, no SQL; read / insert req/s, Hostplane bare token / it):',
      );
      console.log(
        '| server | read req/s | insert req/s | Hostplane / it: read | insert | CPU s read / insert |',
      );
      console.log('| --- | --- | --- | --- | --- | --- |');
      for (const variant of BARE_VARIANTS) {
        const of = (op: Measured['op']) => ceiling.find((c) => c.variant === variant && c.op === op);
        const read = of('read');
        const insert = of('insert');
        if (!read || !insert) continue;
        const share = (op: Measured['op'], m: Measured) =>
          modes.includes('bare') ? (get('hostplane', 'bare', op).reqPerSec / m.reqPerSec).toFixed(2) : '—';
        console.log(
          `| bare ${variant} | ${read.reqPerSec} | ${insert.reqPerSec} | ${share('read', read)} | ${share('insert', insert)} | ${read.cpuSeconds} / ${insert.cpuSeconds} |`,
        );
      }
    }
    console.log(`uptime at start: ${report.uptimeAtStart}\nuptime at end:   ${report.uptimeAtEnd}`);
  }
  if (profile) console.log(`\nHostplane CPU profile (all runs, self time):\n${profile}`);
}

await main();
