// What Litestream replication costs a SQLite shard, measured on real processes: the built
// `hostplane serve` (HOSTPLANE_SQLITE_REPLICATION=required, the pinned .cache/tools/litestream as
// its child), the test suite's throwaway PostgreSQL and MinIO (test/support), all on loopback.
// A benchmark, not a test: it reports figures, and checks only that what it restored is whole.
//
//   make bench-replication            (make build, then this with BENCH_ARGS)
//   scripts/node.sh exec npx tsx bench/replication/bench.ts [--runs 3] [--sizes 5,50]
//     [--counts 0,10,100,300] [--busy-seconds 10] [--inserts 2000] [--skip restore,cost,latency]
//     [--json]
//
// restore.ts: restore time at start per database size; cost.ts: memory, threads, descriptors and
// CPU per open database (shard and Litestream), and a shard's stop / restart / restore-all with
// them; latency.ts: exec p50/p99 with replication on vs off. See README.md for the last run.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { requireLitestream } from '../../test/support/litestream.js';
import { benchCost, type CostResult } from './cost.js';
import { Lab } from './lab.js';
import { benchLatency, type LatencyResult } from './latency.js';
import { report } from './report.js';
import { benchRestore, type RestoreResult } from './restore.js';
import { retried } from './shard.js';

const { values } = parseArgs({
  options: {
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
    runs: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '5,50' },
    counts: { type: 'string', default: '0,10,100,300' },
    'busy-seconds': { type: 'string', default: '10' },
    inserts: { type: 'string', default: '2000' },
    skip: { type: 'string', default: '' },
    json: { type: 'boolean', default: false },
  },
});
const skip = new Set(values.skip.split(',').filter(Boolean));

async function main() {
  const started = performance.now();
  const git = (args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  const cpu = os.cpus();
  const meta: Record<string, string> = {
    date: new Date().toISOString(),
    commit: `${git(['rev-parse', '--short', 'HEAD'])}${git(['status', '--porcelain', '--', 'src']) ? ' (src modified)' : ''}`,
    machine: `${cpu.length} × ${cpu[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.type()} ${os.release()}`,
    node: process.version,
    litestream: execFileSync(requireLitestream(), ['version'], { encoding: 'utf8' }).trim(),
    'load average (1/5/15 min) at start': load(),
  };
  const lab = await Lab.start(path.resolve(values.bin));
  let restore: RestoreResult[] | undefined;
  let cost: CostResult | undefined;
  let latency: LatencyResult[] | undefined;
  try {
    if (!skip.has('restore'))
      restore = await benchRestore(lab, {
        sizesMib: values.sizes.split(',').map(Number),
        runs: Number(values.runs),
      });
    if (!skip.has('cost'))
      cost = await benchCost(lab, {
        counts: values.counts.split(',').map(Number),
        busySeconds: Number(values['busy-seconds']),
      });
    if (!skip.has('latency')) latency = await benchLatency(lab, { inserts: Number(values.inserts) });
  } finally {
    await lab.close();
  }
  meta['load average at end'] = load();
  meta['503 answers retried'] = [...retried].map(([what, n]) => `${n} × ${what}`).join('; ') || 'none';
  meta['bench duration'] = `${((performance.now() - started) / 1000).toFixed(0)} s`;
  if (values.json) console.log(JSON.stringify({ meta, restore, cost, latency }, null, 2));
  else console.log(report({ meta, restore, cost, latency }));
}

await main();
