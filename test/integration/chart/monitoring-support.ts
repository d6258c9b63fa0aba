import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
/** The Grafana dashboard the chart ships. */
export const DASHBOARD = path.join(repo, 'charts', 'hostplane', 'files', 'dashboards', 'hostplane.json');

interface Dashboard {
  uid: string;
  panels: { title: string; targets: { expr: string }[] }[];
}

/** A panel's query as Prometheus would get it from Grafana (its variables filled in). */
export function concreteQuery(expr: string, namespace: string): string {
  return expr.replaceAll('$__rate_interval', '2m').replaceAll('$namespace', namespace);
}

/** Every panel's queries (the real node's story runs each against its Prometheus). */
export async function dashboardQueries(namespace: string): Promise<{ panel: string; expr: string }[]> {
  const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as Dashboard;
  return dashboard.panels.flatMap((p) =>
    p.targets.map((t) => ({ panel: p.title, expr: concreteQuery(t.expr, namespace) })),
  );
}

/** The `hostplane_*` metric families the code registers (every prom-client `name: '…'` in src/ and controllers/). */
export async function hostplaneMetricNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const root of ['src', 'controllers']) {
    for (const entry of await readdir(path.join(repo, root), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const text = await readFile(path.join(entry.parentPath, entry.name), 'utf8');
      for (const match of text.matchAll(/name: '(hostplane_[a-z0-9_]+)'/g)) names.add(match[1]!);
    }
  }
  return names;
}

/**
 * The metric names a PromQL expression reads (`hostplane_…` and `litestream_…`), with the series
 * suffixes of histograms and summaries folded into their family.
 */
export function metricsRead(expr: string): string[] {
  const names = [...expr.matchAll(/\b((?:hostplane|litestream)_[a-z0-9_]+)/g)].map((m) => m[1]!);
  return [...new Set(names)];
}

/** A histogram's `_bucket`/`_sum`/`_count` series belong to the family the code registers. */
export function family(name: string, known: Set<string>): string {
  if (known.has(name)) return name;
  const stripped = name.replace(/_(bucket|sum|count)$/, '');
  return known.has(stripped) ? stripped : name;
}
