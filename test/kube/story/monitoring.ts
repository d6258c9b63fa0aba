/**
 * A real Prometheus on the host of the node: it discovers the release's pods through the node's
 * API server (Kubernetes service discovery, the chart's ServiceMonitor translated the way
 * Prometheus Operator does), scrapes them at their pod IPs, and evaluates the chart's
 * PrometheusRule as rendered with short `for`s and windows (values only: the same rules).
 */
import { expect } from 'vitest';
import { dashboardQueries, metricsRead } from '../../integration/chart/monitoring-support.js';
import { eventually } from '../../support/eventually.js';
import { findObject, renderChart } from '../../support/kube/helm.js';
import {
  serviceMonitorScrapeConfigs,
  startPrometheus,
  type PrometheusServer,
  type RuleGroup,
  type ServiceMonitor,
} from '../../support/prometheus.js';
import { MINUTES, NS, RELEASE, type Story } from './context.js';

/** Scrape and rule evaluation interval of the node's Prometheus. */
export const INTERVAL_SECONDS = 2;

/** The alert values the story renders the rules with: the chart's rules, with story-sized times. */
export const STORY_ALERTS = {
  enabled: true,
  reconcileErrors: { for: '10s', window: '30s' },
  http5xx: { for: '2s', window: '30s' },
  edgeLatency: { for: '10s', window: '30s' },
  litestreamSyncErrors: { for: '10s', window: '30s' },
  sqliteRestoreFailed: { window: '1m' },
  sqliteShardLost: { for: '2s' },
  sqliteFailoverBlocked: { for: '2s' },
};

export async function startNodePrometheus(story: Story): Promise<PrometheusServer> {
  const objects = await renderChart({
    namespace: NS,
    releaseName: RELEASE,
    values: { monitoring: { serviceMonitor: { enabled: true }, prometheusRule: STORY_ALERTS } },
  });
  const monitor = findObject<ServiceMonitor & { kind: string }>(objects, 'ServiceMonitor');
  const rule = findObject<{ kind: string; spec: { groups: RuleGroup[] } }>(objects, 'PrometheusRule');
  return startPrometheus({
    scrapeConfigs: serviceMonitorScrapeConfigs(monitor, story.nodeEnv('KUBECONFIG')),
    ruleGroups: rule.spec.groups,
    interval: `${INTERVAL_SECONDS}s`,
  });
}

/** Waits until every pod of the four roles is an `up` target on `metrics`, and each shard on `litestream`. */
export async function everyPodScraped(story: Story): Promise<string[]> {
  const prometheus = story.prometheus!;
  return eventually(
    'every Hostplane pod and Litestream scraped and up',
    async () => {
      const pods = (
        await Promise.all(['api', 'edge', 'controller', 'sqlite'].map((c) => story.pods(c)))
      ).flat();
      const shards = await story.pods('sqlite');
      const want = [
        ...pods.map((p) => `${p.name}/metrics`),
        ...shards.map((p) => `${p.name}/litestream`),
      ].sort();
      const up = (await prometheus.targets())
        .filter((t) => t.health === 'up')
        .map((t) => `${t.labels.pod}/${t.labels.endpoint}`)
        .sort();
      return want.every((w) => up.includes(w)) ? up : undefined;
    },
    3 * MINUTES,
  );
}

/** The alert `name` in `state` now (its labels), or undefined. */
export async function alertIn(
  prometheus: PrometheusServer,
  name: string,
  state: 'pending' | 'firing',
): Promise<Record<string, string> | undefined> {
  return (await prometheus.alerts()).find((a) => a.labels.alertname === name && a.state === state)?.labels;
}

/** Whether the alert was in `state` at some evaluation since `sinceMs` (Prometheus's ALERTS series). */
export async function alertWas(
  prometheus: PrometheusServer,
  name: string,
  state: 'pending' | 'firing',
  sinceMs: number,
): Promise<boolean> {
  const range = Math.max(INTERVAL_SECONDS * 2, Math.ceil((Date.now() - sinceMs) / 1000) + INTERVAL_SECONDS);
  const result = await prometheus.query(
    `max_over_time(ALERTS{alertname="${name}", alertstate="${state}", namespace="${NS}"}[${range}s])`,
  );
  return result.some((s) => Number(s.value[1]) === 1);
}

/** Waits until the alert fires, having gone pending first; then (after `heal`) until it is gone. */
export async function watchAlert(
  prometheus: PrometheusServer,
  name: string,
  sinceMs: number,
  timeoutMs: number,
): Promise<{ firingAfterMs: number }> {
  await eventually(`${name} firing`, () => alertIn(prometheus, name, 'firing'), timeoutMs);
  const firingAfterMs = Date.now() - sinceMs;
  expect(await alertWas(prometheus, name, 'pending', sinceMs), `${name} went pending first`).toBe(true);
  return { firingAfterMs };
}

export async function alertResolved(
  prometheus: PrometheusServer,
  name: string,
  timeoutMs: number,
): Promise<void> {
  await eventually(
    `${name} resolved`,
    async () => !(await prometheus.alerts()).some((a) => a.labels.alertname === name),
    timeoutMs,
  );
}

/**
 * When a series first had a value other than 0 since `sinceMs` (ms after it), from Prometheus's
 * samples: what the story reports of how the alert's inputs moved.
 */
export async function firstNonZeroAfterMs(
  prometheus: PrometheusServer,
  selector: string,
  sinceMs: number,
): Promise<number | undefined> {
  const range = Math.ceil((Date.now() - sinceMs) / 1000) + INTERVAL_SECONDS;
  const res = await fetch(
    `${prometheus.url}/api/v1/query?query=${encodeURIComponent(`${selector}[${range}s]`)}`,
  );
  const body = (await res.json()) as { data?: { result: { values: [number, string][] }[] } };
  const times = (body.data?.result ?? [])
    .flatMap((r) => r.values)
    .filter(([t, v]) => t * 1000 >= sinceMs && Number(v) !== 0)
    .map(([t]) => t * 1000 - sinceMs);
  return times.length > 0 ? Math.min(...times) : undefined;
}

/** Every panel's query returns at least one series; the empty ones are named when some do not. */
export async function dashboardEmptyPanels(prometheus: PrometheusServer): Promise<string[]> {
  const empty: string[] = [];
  for (const { panel, expr } of await dashboardQueries(NS))
    if ((await prometheus.query(expr)).length === 0) empty.push(`${panel}: ${expr}`);
  return empty;
}

/** The metric names the rendered rules read that the node's Prometheus has no series of. */
export async function ruleMetricsMissing(prometheus: PrometheusServer): Promise<string[]> {
  const objects = await renderChart({
    namespace: NS,
    releaseName: RELEASE,
    values: { monitoring: { prometheusRule: STORY_ALERTS } },
  });
  const rule = findObject<{ kind: string; spec: { groups: RuleGroup[] } }>(objects, 'PrometheusRule');
  const names = new Set(rule.spec.groups.flatMap((g) => g.rules.flatMap((r) => metricsRead(String(r.expr)))));
  const missing: string[] = [];
  for (const name of names)
    if ((await prometheus.query(`group(${name}{namespace="${NS}"})`)).length === 0) missing.push(name);
  return missing;
}
