// What a shard costs per open database: a fresh shard (replication required) sampled from /proc
// (VmRSS, Threads, open fds, CPU) at each count of open databases (each: install + one write), for
// the shard's Node process and its Litestream child. At the last count also: the same while every
// database takes writes (Litestream ships WAL for all of them each second: where threads would
// grow, litestream#1469), the graceful stop with them all open, a restart with their files in
// place, and a restart onto a wiped volume (every database restored before /readyz).
import { randomBytes } from 'node:crypto';
import { log, sleep, median, wipeAllDatabases, type Lab } from './lab.js';
import {
  api,
  createSite,
  histogram,
  installDatabase,
  litestreamPid,
  sampleProc,
  scoped,
  type ProcSample,
  type Shard,
} from './shard.js';

export interface Usage extends ProcSample {
  cpuPercent: number;
}

export interface CostPoint {
  databases: number;
  shard: Usage;
  litestream: Usage;
}

export interface CostResult {
  points: CostPoint[];
  /** At the last count, all databases written round-robin: peaks of RSS and threads. */
  busy: CostPoint & { writesPerSecond: number; seconds: number };
  /** With the last count of databases open and placed on the shard. */
  stopMs: number;
  restartReadyMs: number;
  wipedReadyMs: number;
  wipedRestores: number;
  wipedRestoreSumMs: number;
}

/** Samples `pids` every `everyMs` for `ms`: medians (or peaks) and CPU % over the window. */
async function watch(pids: number[], ms: number, everyMs: number, reduce: 'median' | 'peak') {
  const samples: ProcSample[][] = [pids.map(sampleProc)];
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    await sleep(everyMs);
    samples.push(pids.map(sampleProc));
  }
  const seconds = (performance.now() - t0) / 1000;
  const pick = reduce === 'median' ? median : (xs: number[]) => Math.max(...xs);
  return pids.map((_, i): Usage => {
    const own = samples.map((s) => s[i]!);
    return {
      rssKb: pick(own.map((s) => s.rssKb)),
      threads: pick(own.map((s) => s.threads)),
      fds: pick(own.map((s) => s.fds)),
      cpuSeconds: own.at(-1)!.cpuSeconds,
      cpuPercent: ((own.at(-1)!.cpuSeconds - own[0]!.cpuSeconds) / seconds) * 100,
    };
  });
}

/** Medians over 10 one-second samples after a settle: the window holds one lease/report round. */
async function idlePoint(shard: Shard, databases: number): Promise<CostPoint> {
  await sleep(3_000);
  const [own, litestream] = await watch([shard.pid, litestreamPid(shard)], 10_000, 1_000, 'median');
  return { databases, shard: own!, litestream: litestream! };
}

export async function benchCost(
  lab: Lab,
  opts: { counts: number[]; busySeconds: number },
): Promise<CostResult> {
  const env = await lab.backing('required');
  const dir = await lab.dataDir('cost');
  let shard = await lab.shard('cost', dir, env);
  const apiKey = await createSite(lab.bin, shard, 'cost');
  const tokens: string[] = [];
  const points: CostPoint[] = [];
  for (const target of opts.counts) {
    const t0 = performance.now();
    let next = tokens.length;
    const worker = async () => {
      for (let i = next++; i < target; i = next++) {
        const token = await installDatabase(shard, apiKey, `cost-${i}.sqlite`);
        await api(shard.port, 'POST', '/api/v1/sqlite/batch', scoped(shard, 'cost', token), {
          statements: [
            { sql: 'CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)' },
            { sql: 'INSERT INTO kv (k, v) VALUES (?, ?)', params: ['0', randomBytes(16).toString('hex')] },
          ],
        });
        tokens[i] = token;
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    if (target > 0)
      log(`opened databases up to ${target} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const point = await idlePoint(shard, target);
    points.push(point);
    log(`cost at ${target}: ${JSON.stringify(point)}`);
  }

  // Every database written, round-robin by 4 clients, while Litestream ships them all.
  let writes = 0;
  let stop = false;
  let turn = 0;
  const writer = async () => {
    while (!stop) {
      const i = turn++ % tokens.length;
      await api(shard.port, 'POST', '/api/v1/sqlite/exec', scoped(shard, 'cost', tokens[i]!), {
        sql: 'INSERT INTO kv (k, v) VALUES (?, ?)',
        params: [`${turn}`, randomBytes(16).toString('hex')],
      });
      writes++;
    }
  };
  const writers = Array.from({ length: 4 }, writer);
  await sleep(2_000); // under way
  const writes0 = writes;
  const t0 = performance.now();
  const [own, litestream] = await watch(
    [shard.pid, litestreamPid(shard)],
    opts.busySeconds * 1000,
    250,
    'peak',
  );
  const seconds = (performance.now() - t0) / 1000;
  const writesPerSecond = (writes - writes0) / seconds;
  stop = true;
  await Promise.all(writers);
  const databases = tokens.length;
  const busy = { databases, shard: own!, litestream: litestream!, writesPerSecond, seconds };
  log(`busy at ${databases}: ${JSON.stringify(busy)}`);

  const stopMs = await shard.stop();
  shard = await lab.shard('cost', dir, env);
  const restartReadyMs = shard.readyMs;
  log(
    `stop with ${databases} open: ${stopMs.toFixed(0)} ms; restart: ready in ${restartReadyMs.toFixed(0)} ms`,
  );
  await shard.stop();
  await wipeAllDatabases(dir);
  shard = await lab.shard('cost', dir, env);
  const restored = await histogram(shard, 'hostplane_sqlite_restore_duration_seconds');
  const check = await api(shard.port, 'POST', '/api/v1/sqlite/query', scoped(shard, 'cost', tokens.at(-1)!), {
    sql: 'SELECT count(*) AS n FROM kv',
  });
  if (!((check.rows as { n: number }[])[0]!.n >= 1)) throw new Error('a restored database is empty');
  if (restored.count !== databases) throw new Error(`${restored.count} of ${databases} databases restored`);
  log(`wiped volume: ready in ${shard.readyMs.toFixed(0)} ms, ${restored.count} restores`);
  await shard.stop();
  return {
    points,
    busy,
    stopMs,
    restartReadyMs,
    wipedReadyMs: shard.readyMs,
    wipedRestores: restored.count,
    wipedRestoreSumMs: restored.sum * 1000,
  };
}
