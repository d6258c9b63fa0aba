// exec latency with replication on and off: two shards side by side (one with Litestream, one with
// HOSTPLANE_SQLITE_REPLICATION=off), sequential single-row inserts, alternating in blocks of 100
// between the two so that a change in the machine's load hits both alike. After 200 warm-ups each.
import { randomBytes } from 'node:crypto';
import { percentile, type Lab } from './lab.js';
import { api, createSite, installDatabase, scoped } from './shard.js';

export interface LatencyResult {
  mode: 'on' | 'off';
  inserts: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

export async function benchLatency(lab: Lab, opts: { inserts: number }): Promise<LatencyResult[]> {
  const sides = await Promise.all(
    (['on', 'off'] as const).map(async (mode) => {
      const env = await lab.backing(mode === 'on' ? 'required' : 'off');
      const slug = `latency-${mode}`;
      const shard = await lab.shard(slug, await lab.dataDir(slug), env);
      const apiKey = await createSite(lab.bin, shard, slug);
      const headers = scoped(shard, slug, await installDatabase(shard, apiKey, 'latency.sqlite'));
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
  for (const side of sides) for (let i = 0; i < 200; i++) await insert(side);
  for (let done = 0; done < opts.inserts; done += 100)
    for (const side of sides)
      for (let i = 0; i < Math.min(100, opts.inserts - done); i++) side.times.push(await insert(side));
  for (const side of sides) await side.shard.stop();
  return sides.map((side) => ({
    mode: side.mode,
    inserts: side.times.length,
    p50Ms: percentile(side.times, 50),
    p99Ms: percentile(side.times, 99),
    meanMs: side.times.reduce((a, b) => a + b, 0) / side.times.length,
  }));
}
