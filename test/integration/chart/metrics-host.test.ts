import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { renderChart } from '../../support/kube/helm.js';

// /metrics answers on loopback unless HOSTPLANE_METRICS_HOST says otherwise; in the cluster
// Prometheus scrapes the pod's metrics port from outside, so the chart binds it on every interface
// of the pod (its NetworkPolicy decides who may connect).

interface Container {
  name: string;
  args?: string[];
  env?: { name: string; value?: string }[];
}
type Workload = KubernetesObject & { spec: { template: { spec: { containers: Container[] } } } };

describe('the chart binds the metrics port for Prometheus', () => {
  it('every `serve` container (api, edge, controller, sqlite) sets HOSTPLANE_METRICS_HOST=0.0.0.0', async () => {
    const objects = await renderChart({ namespace: 'hostplane-metrics' });
    const workloads = objects.filter(
      (o) => o.kind === 'Deployment' || o.kind === 'StatefulSet',
    ) as Workload[];
    const serving = workloads.flatMap((w) =>
      w.spec.template.spec.containers
        .filter((c) => c.args?.[0] === 'serve')
        .map((c) => ({
          role: c.args?.[2],
          host: c.env?.find((e) => e.name === 'HOSTPLANE_METRICS_HOST')?.value,
        })),
    );
    expect(serving.map((s) => s.role).sort()).toEqual(['api', 'controller', 'edge', 'sqlite']);
    for (const s of serving) expect(s, s.role).toEqual({ role: s.role, host: '0.0.0.0' });
  });
});
