import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { requireTool } from './kube/envtest.js';
import { captureOutput, freePort, terminate, waitUntilReady } from './procs.js';

/**
 * A real Prometheus (the pin of test/tools/prometheus, built by test/tools/build.sh) for tests:
 * started on loopback with the scrape configs and rule groups a test gives, queried over its API.
 */

const toolsDir = fileURLToPath(new URL('../../.cache/tools/', import.meta.url));
export const PROMETHEUS_BIN = process.env.PROMETHEUS_BIN ?? path.join(toolsDir, 'prometheus');
export const PROMTOOL_BIN = process.env.PROMTOOL_BIN ?? path.join(toolsDir, 'promtool');

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
}

export interface PromTarget {
  labels: Record<string, string>;
  scrapePool: string;
  scrapeUrl: string;
  health: 'up' | 'down' | 'unknown';
  lastError: string;
}

export interface PrometheusServer {
  url: string;
  /** An instant query; throws on a query error. */
  query(expr: string): Promise<PromSample[]>;
  /** Pending and firing alerts. */
  alerts(): Promise<PromAlert[]>;
  /** Active scrape targets. */
  targets(): Promise<PromTarget[]>;
  output(): string;
  stop(): Promise<void>;
}

export interface RuleGroup {
  name: string;
  interval?: string;
  rules: Record<string, unknown>[];
}

export interface PrometheusOptions {
  scrapeConfigs: Record<string, unknown>[];
  ruleGroups?: RuleGroup[];
  /** Scrape and rule evaluation interval (default 2s: tests wait for series and alerts). */
  interval?: string;
}

async function api<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${url}: ${body.error ?? res.status}`);
  return body.data;
}

export async function startPrometheus(options: PrometheusOptions): Promise<PrometheusServer> {
  requireTool(PROMETHEUS_BIN);
  const dir = await mkdtemp(path.join(tmpdir(), 'hostplane-prometheus-'));
  const interval = options.interval ?? '2s';
  const config = {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    rule_files: options.ruleGroups ? ['rules.yaml'] : [],
    scrape_configs: options.scrapeConfigs,
  };
  await writeFile(path.join(dir, 'prometheus.yml'), stringify(config));
  if (options.ruleGroups)
    await writeFile(path.join(dir, 'rules.yaml'), stringify({ groups: options.ruleGroups }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = captureOutput(child);
  const onExit = (): void => void child.kill('SIGKILL');
  process.once('exit', onExit);
  try {
    await waitUntilReady('prometheus', child, output, async () => {
      const res = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      return res.status === 200;
    });
  } catch (err) {
    await terminate(child, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    output,
    query: async (expr) =>
      (await api<{ result: PromSample[] }>(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    alerts: async () => (await api<{ alerts: PromAlert[] }>(`${url}/api/v1/alerts`)).alerts,
    targets: async () =>
      (await api<{ activeTargets: PromTarget[] }>(`${url}/api/v1/targets?state=active`)).activeTargets,
    stop: async () => {
      process.removeListener('exit', onExit);
      await terminate(child, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface ServiceMonitor {
  metadata?: { name?: string; namespace?: string };
  spec: {
    selector: {
      matchLabels?: Record<string, string>;
      matchExpressions?: { key: string; operator: string; values?: string[] }[];
    };
    namespaceSelector?: { matchNames?: string[] };
    endpoints: { port: string; path?: string; scheme?: string; interval?: string; scrapeTimeout?: string }[];
  };
}

/** A Kubernetes label name as Prometheus's service discovery spells it in meta labels. */
const metaName = (label: string): string => label.replace(/[^a-zA-Z0-9_]/g, '_');
const escapeRegex = (value: string): string => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The scrape configs Prometheus Operator generates for a ServiceMonitor (role `endpoints`; the
 * Service selected by its labels, the endpoint by port name; target labels namespace, service,
 * pod, container, endpoint and job), discovering through `kubeconfig`. Intervals are the test's
 * (the monitor's 30 s would make a test wait); everything that selects and names is the monitor's.
 */
export function serviceMonitorScrapeConfigs(
  monitor: ServiceMonitor,
  kubeconfig: string,
  options: { mapAddress?: { from: string; to: string } } = {},
): Record<string, unknown>[] {
  // Endpoints may not hold loopback addresses: a test without pods writes a documentation address
  // (e.g. 192.0.2.10) and has Prometheus scrape the same port on loopback instead.
  const mapped = options.mapAddress;
  const mapAddress = mapped
    ? [
        {
          source_labels: ['__address__'],
          regex: `${escapeRegex(mapped.from)}:(\\d+)`,
          target_label: '__address__',
          replacement: `${mapped.to}:$1`,
        },
      ]
    : [];
  const { selector } = monitor.spec;
  const keep: Record<string, unknown>[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    keep.push({
      action: 'keep',
      source_labels: [
        `__meta_kubernetes_service_label_${metaName(key)}`,
        `__meta_kubernetes_service_labelpresent_${metaName(key)}`,
      ],
      regex: `(${escapeRegex(value)});true`,
    });
  }
  for (const expression of selector.matchExpressions ?? []) {
    if (expression.operator !== 'In')
      throw new Error(`selector operator ${expression.operator} not translated`);
    keep.push({
      action: 'keep',
      source_labels: [
        `__meta_kubernetes_service_label_${metaName(expression.key)}`,
        `__meta_kubernetes_service_labelpresent_${metaName(expression.key)}`,
      ],
      regex: `(${(expression.values ?? []).map(escapeRegex).join('|')});true`,
    });
  }
  const namespaces = monitor.spec.namespaceSelector?.matchNames ?? [monitor.metadata?.namespace ?? 'default'];
  return monitor.spec.endpoints.map((endpoint, i) => ({
    job_name: `serviceMonitor/${monitor.metadata?.namespace}/${monitor.metadata?.name}/${i}`,
    metrics_path: endpoint.path ?? '/metrics',
    scheme: endpoint.scheme ?? 'http',
    kubernetes_sd_configs: [
      { role: 'endpoints', kubeconfig_file: kubeconfig, namespaces: { names: namespaces } },
    ],
    relabel_configs: [
      ...keep,
      { action: 'keep', source_labels: ['__meta_kubernetes_endpoint_port_name'], regex: endpoint.port },
      { action: 'drop', source_labels: ['__meta_kubernetes_pod_phase'], regex: '(Failed|Succeeded)' },
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
      { source_labels: ['__meta_kubernetes_service_name'], target_label: 'service' },
      { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
      { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
      { source_labels: ['__meta_kubernetes_service_name'], target_label: 'job' },
      { target_label: 'endpoint', replacement: endpoint.port },
      ...mapAddress,
    ],
  }));
}
