import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';
import { applyOrThrow, ensureNamespace } from '../../support/kube/apply.js';
import { componentObjects, findObject, renderChart } from '../../support/kube/helm.js';
import {
  serviceMonitorScrapeConfigs,
  startPrometheus,
  type PrometheusServer,
  type RuleGroup,
  type ServiceMonitor,
} from '../../support/prometheus.js';

// A real Prometheus discovers Hostplane the way the chart's ServiceMonitor describes it (Kubernetes
// service discovery against a real kube-apiserver, Prometheus Operator's relabelling) and loads the
// chart's alert rules. No kubelet here: the api Service's Endpoints are written by the test and
// point at a real Hostplane process on loopback. (The real node's story does it with pods.)

const NS = 'hostplane';
/** Stands for the api pod's address (Endpoints refuse loopback); Prometheus maps it to 127.0.0.1. */
const POD_IP = '192.0.2.10';

type Service = KubernetesObject & {
  spec: { selector?: Record<string, string>; ports: { name: string; port: number }[] };
};

describe('Prometheus scrapes Hostplane as the chart describes', () => {
  let env: KubeTestEnv;
  let hp: TestHostplane;
  let prometheus: PrometheusServer;

  beforeAll(async () => {
    [env, hp] = await Promise.all([startKubeTestEnv(), startHostplane('pglite+fs')]);
    await ensureNamespace(env, NS);
    const objects = await renderChart({
      namespace: NS,
      values: { monitoring: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } } },
    });
    // The api Service as rendered, without its selector (no pods: the test writes its Endpoints).
    const [apiService] = componentObjects<Service>(objects, 'Service', 'api');
    if (!apiService?.metadata?.name) throw new Error('the chart renders no api Service');
    const { selector: _selector, ...spec } = apiService.spec;
    // Another Service in the namespace with a `metrics` port: not the chart's, never scraped.
    const stranger: Service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'stranger', namespace: NS, labels: { 'app.kubernetes.io/name': 'other' } },
      spec: { ports: [{ name: 'metrics', port: 9090 }] },
    };
    const metricsPort = Number(new URL(hp.metricsUrl).port);
    const endpoints = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name, namespace: NS },
      subsets: [
        {
          addresses: [{ ip: POD_IP }],
          ports: [
            { name: 'metrics', port: metricsPort },
            { name: 'http', port: hp.port },
          ],
        },
      ],
    });
    const selectorless: Service = { ...apiService, spec };
    await applyOrThrow(env, [
      selectorless,
      stranger,
      endpoints(apiService.metadata.name),
      endpoints('stranger'),
    ]);
    const monitor = findObject<KubernetesObject & ServiceMonitor>(objects, 'ServiceMonitor');
    const rule = findObject<KubernetesObject & { spec: { groups: RuleGroup[] } }>(objects, 'PrometheusRule');
    prometheus = await startPrometheus({
      scrapeConfigs: serviceMonitorScrapeConfigs(monitor, env.kubeconfigPath, {
        mapAddress: { from: POD_IP, to: '127.0.0.1' },
      }),
      ruleGroups: rule.spec.groups,
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([prometheus?.stop(), hp?.stop(), env?.stop()]);
  });

  it("scrapes the api's metrics port with the operator's target labels, and nothing else", async () => {
    const series = await eventually('hostplane_build_info scraped', async () => {
      const result = await prometheus.query('hostplane_build_info');
      return result.length > 0 ? result : undefined;
    });
    expect(series).toHaveLength(1);
    expect(series[0]?.metric).toMatchObject({
      namespace: NS,
      service: 'hostplane-api',
      job: 'hostplane-api',
      endpoint: 'metrics',
    });
    const targets = await prometheus.targets();
    expect(targets.map((t) => [t.labels.service, t.labels.endpoint, t.health])).toEqual([
      ['hostplane-api', 'metrics', 'up'],
    ]);
  });

  it("loads the chart's alert rules, which evaluate without error and stay quiet on a healthy server", async () => {
    const res = await fetch(`${prometheus.url}/api/v1/rules?type=alert`);
    const body = (await res.json()) as {
      data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
    };
    const rules = body.data.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.name)).toContain('HostplaneHighHttp5xxRatio');
    await eventually('every rule evaluated', async () => {
      const again = (await (await fetch(`${prometheus.url}/api/v1/rules?type=alert`)).json()) as typeof body;
      const all = again.data.groups.flatMap((g) => g.rules);
      return all.every((r) => r.health === 'ok') ? all : undefined;
    });
    expect(await prometheus.alerts()).toEqual([]);
  });
});
