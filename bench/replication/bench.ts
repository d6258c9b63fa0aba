// What Litestream replication costs a SQLite shard, measured on real processes: the built
// `hostplane serve` (HOSTPLANE_SQLITE_REPLICATION=required, the pinned .cache/tools/litestream as
// its child), the test suite's throwaway PostgreSQL and MinIO (test/support), all on loopback.
// A benchmark, not a test: it reports figures and checks only that what it restored is whole.
//
//   make bench-replication            (= make build, then)
//   scripts/node.sh exec npx tsx bench/replication/bench.ts [--runs 3] [--sizes 5,50]
//     [--counts 0,10,100,300] [--inserts 2000] [--skip restore,cost,latency] [--json]
//
// 1. Restore: one shard, one database per size (MiB) filled through the batch API with random
//    blobs; each run stops the shard (SIGTERM: the graceful stop syncs the last of the WAL), wipes
//    that database's files, starts it again and times spawn → /readyz 200 (start-up restores the
//    databases placed on it before it is ready) and the restore itself (the shard's
//    hostplane_sqlite_restore_duration_seconds). A start with nothing wiped is the baseline.
// 2. Cost per open database: a fresh shard, sampled (/proc: VmRSS, Threads, fds, CPU) at each
//    count of open databases (each: install + one write), for the shard and its Litestream.
// 3. Write latency: a shard with replication and one without, run side by side, sequential
//    single-row inserts alternating in blocks between the two; p50/p99 and the ratio.
// See README.md for the last run's figures.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { requireLitestream } from '../../test/support/litestream.js';
import { createBucket, startMinio, type MinioServer } from '../../test/support/minio.js';
import { createDatabase, startPostgres, type PostgresServer } from '../../test/support/postgres.js';
import { s3Env } from '../support/server.js';
import {
  api,
  createSite,
  histogram,
  installDatabase,
  scoped,
  launchShard,
  litestreamPid,
  sampleProc,
  wipeDatabase,
  type ProcSample,
  type Shard,
} from './shard.js';

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    runs: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '5,50' },
    counts: { type: 'string', default: '0,10,100,300' },
    inserts: { type: 'string', default: '2000' },
    skip: { type: 'string', default: '' },
    json: { type: 'boolean', default: false },
  },
});
const BIN = values.bin;
const RUNS = Number(values.runs);
const SIZES_MIB = values.sizes.split(',').map(Number);
const COUNTS = values.counts.split(',').map(Number);
const INSERTS = Number(values.inserts);
const SKIP = new Set(values.skip.split(',').filter(Boolean));
const MIB = 1024 * 1024;

const log = (message: string) => console.error(`bench-replication: ${message}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

let postgres: PostgresServer | undefined;
let minio: MinioServer | undefined;
const cleanups: (() => Promise<void>)[] = [];

/** A fresh PostgreSQL database and bucket, and the env a shard needs for them. */
async function backing(replication: 'required' | 'off'): Promise<NodeJS.ProcessEnv> {
  const [databaseUrl, bucket] = await Promise.all([createDatabase(postgres!.url), createBucket(minio!)]);
  return {
    DATABASE_URL: databaseUrl,
    ...s3Env(minio!, bucket),
    HOSTPLANE_SQLITE_REPLICATION: replication,
    HOSTPLANE_LITESTREAM_BIN: requireLitestream(),
  };
}

async function dataDir(name: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `hostplane-bench-replication-${name}-`));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Launches a shard that the bench kills on the way out should it still run. */
async function shardOn(name: string, dir: string, env: NodeJS.ProcessEnv): Promise<Shard> {
  const shard = await launchShard({ bin: BIN, name, dataDir: dir, env });
  cleanups.push(() => shard.kill());
  return shard;
}

// ---------------------------------------------------------------------------------------------
// 1. Restore time

const BLOB_BYTES = 3000; // one row per 4 KiB page
const ROWS_PER_BATCH = 200; // ~830 KB of JSON: under the API's 1 MiB body limit

async function fill(shard: Shard, headers: Record<string, string>, bytes: number) {
  await api(shard.port, 'POST', '/api/v1/sqlite/exec', headers, {
    sql: 'CREATE TABLE blobs (id INTEGER PRIMARY KEY, note TEXT NOT NULL, data BLOB NOT NULL)',
  });
  let size = 0;
  while (size < bytes) {
    // About a page per row: the last batch is cut to land near the target size.
    const rows = Math.min(ROWS_PER_BATCH, Math.ceil((bytes - size) / 4096));
    const statements = Array.from({ length: rows }, () => ({
      sql: 'INSERT INTO blobs (note, data) VALUES (?, ?)',
      params: [randomBytes(24).toString('hex'), { $base64: randomBytes(BLOB_BYTES).toString('base64') }],
    }));
    await api(shard.port, 'POST', '/api/v1/sqlite/batch', headers, { statements });
    size = (await api(shard.port, 'GET', '/api/v1/sqlite/version', headers)).sizeBytes as number;
  }
}

async function contents(shard: Shard, headers: Record<string, string>) {
  const query = await api(shard.port, 'POST', '/api/v1/sqlite/query', headers, {
    sql: 'SELECT count(*) AS n, sum(length(data)) AS bytes FROM blobs',
  });
  const version = await api(shard.port, 'GET', '/api/v1/sqlite/version', headers);
  return { ...(query.rows as { n: number; bytes: number }[])[0]!, sizeBytes: version.sizeBytes as number };
}

interface RestoreResult {
  label: string;
  sizeBytes: number;
  readyMs: number[];
  restoreMs: number[];
  stopMs: number[];
}

async function benchRestore(): Promise<RestoreResult[]> {
  const env = await backing('required');
  const dir = await dataDir('restore');
  let shard = await shardOn('restore', dir, env);
  const apiKey = await createSite(BIN, shard, 'restore');
  const dbs: { mib: number; path: string; token: string }[] = [];
  for (const mib of SIZES_MIB) {
    const dbPath = `db-${mib}mib.sqlite`;
    const token = await installDatabase(shard, apiKey, dbPath);
    const t0 = performance.now();
    await fill(shard, scoped(shard, 'restore', token), mib * MIB);
    log(`filled ${dbPath} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    dbs.push({ mib, path: dbPath, token });
  }
  const expected = new Map<string, Awaited<ReturnType<typeof contents>>>();
  for (const db of dbs) expected.set(db.path, await contents(shard, scoped(shard, 'restore', db.token)));
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  client.on('error', (err) => log(`pg client: ${err.message}`));
  await client.connect();
  const ids = new Map(
    (await client.query<{ id: number; path: string }>('SELECT id, path FROM sqlite_databases')).rows.map(
      (r) => [r.path, r.id],
    ),
  );
  await client.end();
  const results: RestoreResult[] = [];
  const first: RestoreResult = {
    label: 'nothing wiped (baseline)',
    sizeBytes: 0,
    readyMs: [],
    restoreMs: [],
    stopMs: [],
  };
  results.push(first);
  // The first stop also ships whatever the fill left behind: reported apart.
  log(`first graceful stop after the fill: ${(await shard.stop()).toFixed(0)} ms`);
  const cases = [undefined, ...dbs];
  for (const db of cases) {
    const result: RestoreResult =
      db === undefined
        ? first
        : {
            label: `${db.mib} MiB`,
            sizeBytes: expected.get(db.path)!.sizeBytes,
            readyMs: [],
            restoreMs: [],
            stopMs: [],
          };
    if (db) results.push(result);
    for (let run = 0; run < RUNS; run++) {
      if (db) await wipeDatabase(dir, ids.get(db.path)!);
      shard = await shardOn('restore', dir, env);
      const restore = await histogram(shard, 'hostplane_sqlite_restore_duration_seconds');
      if (restore.count !== (db ? 1 : 0))
        throw new Error(`${result.label}: ${restore.count} restores at start, expected ${db ? 1 : 0}`);
      result.readyMs.push(shard.readyMs);
      if (db) {
        result.restoreMs.push(restore.sum * 1000);
        const got = await contents(shard, scoped(shard, 'restore', db.token));
        const want = expected.get(db.path)!;
        if (got.n !== want.n || got.bytes !== want.bytes)
          throw new Error(`${db.path} restored ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
      }
      result.stopMs.push(await shard.stop());
      log(
        `restore ${result.label} run ${run + 1}: ready ${shard.readyMs.toFixed(0)} ms` +
          (db ? `, restore ${(restore.sum * 1000).toFixed(0)} ms` : ''),
      );
    }
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// 2. Cost per open database

interface CostPoint {
  databases: number;
  shard: ProcSample & { cpuPercent: number };
  litestream: ProcSample & { cpuPercent: number };
}

/** Medians over 10 one-second samples after a settle (the window holds one lease/report round). */
async function sampleShard(shard: Shard, databases: number): Promise<CostPoint> {
  await sleep(3_000);
  const lsPid = litestreamPid(shard);
  const pids = [shard.pid, lsPid];
  const samples: ProcSample[][] = [pids.map(sampleProc)];
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) {
    await sleep(1_000);
    samples.push(pids.map(sampleProc));
  }
  const seconds = (performance.now() - t0) / 1000;
  const of = (i: number) => {
    const own = samples.map((s) => s[i]!);
    return {
      rssKb: median(own.map((s) => s.rssKb)),
      threads: median(own.map((s) => s.threads)),
      fds: median(own.map((s) => s.fds)),
      cpuSeconds: own.at(-1)!.cpuSeconds,
      cpuPercent: ((own.at(-1)!.cpuSeconds - own[0]!.cpuSeconds) / seconds) * 100,
    };
  };
  return { databases, shard: of(0), litestream: of(1) };
}

async function benchCost(): Promise<CostPoint[]> {
  const env = await backing('required');
  const shard = await shardOn('cost', await dataDir('cost'), env);
  const apiKey = await createSite(BIN, shard, 'cost');
  const points: CostPoint[] = [];
  let open = 0;
  for (const target of COUNTS) {
    const t0 = performance.now();
    const next = () => (open < target ? open++ : undefined);
    const worker = async () => {
      for (let i = next(); i !== undefined; i = next()) {
        const token = await installDatabase(shard, apiKey, `cost-${i}.sqlite`);
        await api(shard.port, 'POST', '/api/v1/sqlite/batch', scoped(shard, 'cost', token), {
          statements: [
            { sql: 'CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)' },
            {
              sql: 'INSERT INTO kv (k, v) VALUES (?, ?)',
              params: ['hello', randomBytes(16).toString('hex')],
            },
          ],
        });
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    if (target > 0)
      log(`opened databases up to ${target} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const point = await sampleShard(shard, target);
    points.push(point);
    log(`cost at ${target}: ${JSON.stringify(point)}`);
  }
  await shard.stop();
  return points;
}

// ---------------------------------------------------------------------------------------------
// 3. Write latency, replication on vs off

interface LatencyResult {
  mode: 'on' | 'off';
  inserts: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

async function benchLatency(): Promise<LatencyResult[]> {
  const modes = ['on', 'off'] as const;
  const sides = await Promise.all(
    modes.map(async (mode) => {
      const env = await backing(mode === 'on' ? 'required' : 'off');
      const shard = await shardOn(`latency-${mode}`, await dataDir(`latency-${mode}`), env);
      const apiKey = await createSite(BIN, shard, `latency-${mode}`);
      const token = await installDatabase(shard, apiKey, 'latency.sqlite');
      const headers = scoped(shard, `latency-${mode}`, token);
      await api(shard.port, 'POST', '/api/v1/sqlite/exec', headers, {
        sql: 'CREATE TABLE log (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, note TEXT NOT NULL)',
      });
      return { mode, shard, headers, times: [] as number[] };
    }),
  );
  const insert = async (side: (typeof sides)[number]) => {
    const t0 = performance.now();
    await api(side.shard.port, 'POST', '/api/v1/sqlite/exec', side.headers, {
      sql: 'INSERT INTO log (at, note) VALUES (?, ?)',
      params: [Date.now(), randomBytes(32).toString('hex')],
    });
    return performance.now() - t0;
  };
  for (const side of sides) for (let i = 0; i < 200; i++) await insert(side); // warm-up
  // Blocks of 100 alternate between the two, so a change in the machine's load hits both alike.
  for (let done = 0; done < INSERTS; done += 100)
    for (const side of sides)
      for (let i = 0; i < Math.min(100, INSERTS - done); i++) side.times.push(await insert(side));
  for (const side of sides) await side.shard.stop();
  return sides.map((side) => ({
    mode: side.mode,
    inserts: side.times.length,
    p50Ms: percentile(side.times, 50),
    p99Ms: percentile(side.times, 99),
    meanMs: side.times.reduce((a, b) => a + b, 0) / side.times.length,
  }));
}

// ---------------------------------------------------------------------------------------------

function report(
  restore: RestoreResult[] | undefined,
  cost: CostPoint[] | undefined,
  latency: LatencyResult[] | undefined,
  meta: Record<string, string | number>,
): string {
  const out: string[] = [];
  const f0 = (n: number) => n.toFixed(0);
  const mb = (kb: number) => (kb / 1024).toFixed(1);
  for (const [k, v] of Object.entries(meta)) out.push(`- ${k}: ${v}`);
  if (restore) {
    out.push('', `### Restore at start (${RUNS} runs, median; min–max)`, '');
    out.push('| database | file size | spawn → /readyz 200 | restore (metric) | graceful stop |');
    out.push('| --- | --- | --- | --- | --- |');
    const range = (xs: number[]) => `${f0(median(xs))} ms (${f0(Math.min(...xs))}–${f0(Math.max(...xs))})`;
    for (const r of restore)
      out.push(
        `| ${r.label} | ${r.sizeBytes ? `${(r.sizeBytes / MIB).toFixed(1)} MiB` : '—'} | ${range(r.readyMs)} | ${r.restoreMs.length ? range(r.restoreMs) : '—'} | ${range(r.stopMs)} |`,
      );
  }
  if (cost) {
    out.push('', '### Cost per open database (medians of 10 one-second samples)', '');
    out.push(
      '| open databases | shard RSS MiB | shard threads | shard fds | shard CPU % idle | Litestream RSS MiB | Litestream threads | Litestream fds | Litestream CPU % idle |',
    );
    out.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const p of cost)
      out.push(
        `| ${p.databases} | ${mb(p.shard.rssKb)} | ${p.shard.threads} | ${p.shard.fds} | ${p.shard.cpuPercent.toFixed(1)} | ${mb(p.litestream.rssKb)} | ${p.litestream.threads} | ${p.litestream.fds} | ${p.litestream.cpuPercent.toFixed(1)} |`,
      );
    out.push(
      '',
      '| per database, between | shard RSS KiB | shard fds | Litestream RSS KiB | Litestream threads | Litestream fds |',
    );
    out.push('| --- | --- | --- | --- | --- | --- |');
    for (let i = 1; i < cost.length; i++) {
      const a = cost[i - 1]!;
      const b = cost[i]!;
      const n = b.databases - a.databases;
      const per = (x: number, y: number) => ((y - x) / n).toFixed(2);
      out.push(
        `| ${a.databases} → ${b.databases} | ${per(a.shard.rssKb, b.shard.rssKb)} | ${per(a.shard.fds, b.shard.fds)} | ${per(a.litestream.rssKb, b.litestream.rssKb)} | ${per(a.litestream.threads, b.litestream.threads)} | ${per(a.litestream.fds, b.litestream.fds)} |`,
      );
    }
  }
  if (latency) {
    const on = latency.find((l) => l.mode === 'on')!;
    const off = latency.find((l) => l.mode === 'off')!;
    out.push('', `### exec latency, ${on.inserts} sequential single-row inserts each`, '');
    out.push('| replication | p50 ms | p99 ms | mean ms |', '| --- | --- | --- | --- |');
    for (const l of [on, off])
      out.push(`| ${l.mode} | ${l.p50Ms.toFixed(2)} | ${l.p99Ms.toFixed(2)} | ${l.meanMs.toFixed(2)} |`);
    out.push(
      `| ratio on / off | ${(on.p50Ms / off.p50Ms).toFixed(2)} | ${(on.p99Ms / off.p99Ms).toFixed(2)} | ${(on.meanMs / off.meanMs).toFixed(2)} |`,
    );
  }
  return out.join('\n');
}

async function main() {
  const started = performance.now();
  const git = (args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
  const meta: Record<string, string | number> = {
    date: new Date().toISOString(),
    commit: `${git(['rev-parse', '--short', 'HEAD'])}${git(['status', '--porcelain', '--', 'src']) ? ' (src modified)' : ''}`,
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.type()} ${os.release()}`,
    node: process.version,
    litestream: execFileSync(requireLitestream(), ['version'], { encoding: 'utf8' }).trim(),
    'load average at start': os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  };
  [postgres, minio] = await Promise.all([startPostgres(), startMinio()]);
  let restore: RestoreResult[] | undefined;
  let cost: CostPoint[] | undefined;
  let latency: LatencyResult[] | undefined;
  try {
    if (!SKIP.has('restore')) restore = await benchRestore();
    if (!SKIP.has('cost')) cost = await benchCost();
    if (!SKIP.has('latency')) latency = await benchLatency();
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await Promise.all([postgres.stop(), minio.stop()]);
  }
  meta['load average at end'] = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  meta['bench duration'] = `${((performance.now() - started) / 1000).toFixed(0)} s`;
  if (values.json) console.log(JSON.stringify({ meta, restore, cost, latency }, null, 2));
  else console.log(report(restore, cost, latency, meta));
}

await main();
