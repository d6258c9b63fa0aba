// The markdown tables bench/replication prints (and README.md keeps from the last run).
import type { CostResult } from './cost.js';
import { median, MIB } from './lab.js';
import type { LatencyResult } from './latency.js';
import type { RestoreResult } from './restore.js';

const f0 = (n: number) => n.toFixed(0);
const mib = (kb: number) => (kb / 1024).toFixed(1);
const range = (xs: number[]) => `${f0(median(xs))} ms (${f0(Math.min(...xs))}–${f0(Math.max(...xs))})`;

function restoreTable(restore: RestoreResult[]): string[] {
  const runs = restore[0]?.readyMs.length ?? 0;
  const out = ['', `### Restore at start (${runs} runs each: median (min–max))`, ''];
  out.push('| database wiped | file size | spawn → /readyz 200 | restore (metric) | graceful stop after |');
  out.push('| --- | --- | --- | --- | --- |');
  for (const r of restore)
    out.push(
      `| ${r.label} | ${r.sizeBytes ? `${(r.sizeBytes / MIB).toFixed(1)} MiB` : '—'} | ${range(r.readyMs)} | ${r.restoreMs.length ? range(r.restoreMs) : '—'} | ${range(r.stopMs)} |`,
    );
  return out;
}

function costTables(cost: CostResult): string[] {
  const out = ['', '### Cost per open database (idle: medians of 10 one-second samples)', ''];
  out.push(
    '| open databases | shard RSS MiB | shard threads | shard fds | shard CPU % | Litestream RSS MiB | Litestream threads | Litestream fds | Litestream CPU % |',
  );
  out.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  const row = (label: string, p: CostResult['points'][number]) =>
    `| ${label} | ${mib(p.shard.rssKb)} | ${p.shard.threads} | ${p.shard.fds} | ${p.shard.cpuPercent.toFixed(1)} | ${mib(p.litestream.rssKb)} | ${p.litestream.threads} | ${p.litestream.fds} | ${p.litestream.cpuPercent.toFixed(1)} |`;
  for (const p of cost.points) out.push(row(String(p.databases), p));
  const b = cost.busy;
  out.push(
    row(`${b.databases}, all written (${f0(b.writesPerSecond)} writes/s over ${f0(b.seconds)} s; peaks)`, b),
  );
  out.push(
    '',
    '| per database, between | shard RSS KiB | shard fds | Litestream RSS KiB | Litestream threads | Litestream fds |',
  );
  out.push('| --- | --- | --- | --- | --- | --- |');
  for (let i = 1; i < cost.points.length; i++) {
    const a = cost.points[i - 1]!;
    const z = cost.points[i]!;
    const per = (x: number, y: number) => ((y - x) / (z.databases - a.databases)).toFixed(1);
    out.push(
      `| ${a.databases} → ${z.databases} | ${per(a.shard.rssKb, z.shard.rssKb)} | ${per(a.shard.fds, z.shard.fds)} | ${per(a.litestream.rssKb, z.litestream.rssKb)} | ${per(a.litestream.threads, z.litestream.threads)} | ${per(a.litestream.fds, z.litestream.fds)} |`,
    );
  }
  const n = b.databases;
  out.push('', `### A shard with ${n} databases placed on it`, '');
  out.push('| | time |', '| --- | --- |');
  out.push(`| graceful stop (a last sync of each) | ${f0(cost.stopMs)} ms |`);
  out.push(`| restart, files in place: spawn → /readyz 200 | ${f0(cost.restartReadyMs)} ms |`);
  out.push(
    `| restart onto a wiped volume: spawn → /readyz 200 (${cost.wipedRestores} restores, ${f0(cost.wipedRestoreSumMs / Math.max(1, cost.wipedRestores))} ms each on average, 4 at a time) | ${f0(cost.wipedReadyMs)} ms |`,
  );
  return out;
}

function latencyTable(latency: LatencyResult[]): string[] {
  const on = latency.find((l) => l.mode === 'on')!;
  const off = latency.find((l) => l.mode === 'off')!;
  const out = ['', `### exec latency, ${on.inserts} sequential single-row inserts each`, ''];
  out.push('| replication | p50 ms | p99 ms | mean ms |', '| --- | --- | --- | --- |');
  for (const l of [on, off])
    out.push(`| ${l.mode} | ${l.p50Ms.toFixed(2)} | ${l.p99Ms.toFixed(2)} | ${l.meanMs.toFixed(2)} |`);
  out.push(
    `| ratio on / off | ${(on.p50Ms / off.p50Ms).toFixed(2)} | ${(on.p99Ms / off.p99Ms).toFixed(2)} | ${(on.meanMs / off.meanMs).toFixed(2)} |`,
  );
  return out;
}

export function report(parts: {
  meta: Record<string, string>;
  restore?: RestoreResult[];
  cost?: CostResult;
  latency?: LatencyResult[];
}): string {
  const out = Object.entries(parts.meta).map(([k, v]) => `- ${k}: ${v}`);
  if (parts.restore) out.push(...restoreTable(parts.restore));
  if (parts.cost) out.push(...costTables(parts.cost));
  if (parts.latency) out.push(...latencyTable(parts.latency));
  return out.join('\n');
}
