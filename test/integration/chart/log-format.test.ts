import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { describeObject, renderChart } from '../../support/kube/helm.js';

// Issue 33, "Logs a person can read": a process on a terminal prints readable lines
// (HOSTPLANE_LOG_FORMAT=auto); in the cluster the logs are always JSON, for the log collector, even
// when a container gets a TTY (`tty: true`, `kubectl run -t`): the chart says `json` explicitly.

interface Container {
  name: string;
  image?: string;
  env?: { name: string; value?: string }[];
}
type Workload = KubernetesObject & {
  spec: {
    template?: { spec: { containers: Container[]; initContainers?: Container[] } };
    jobTemplate?: { spec: { template: { spec: { containers: Container[] } } } };
  };
};

const WORKLOADS = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'];

/** The Hostplane containers of every workload the chart renders (init containers copy tools: not Hostplane). */
function hostplaneContainers(objects: KubernetesObject[]): { where: string; container: Container }[] {
  return (objects.filter((o) => WORKLOADS.includes(o.kind ?? '')) as Workload[]).flatMap((w) => {
    const pod = w.spec.template?.spec ?? w.spec.jobTemplate?.spec.template.spec;
    return (pod?.containers ?? [])
      .filter((c) => c.image?.includes('hostplane'))
      .map((container) => ({ where: `${describeObject(w)} ${container.name}`, container }));
  });
}

describe('the chart: log format', () => {
  it('sets HOSTPLANE_LOG_FORMAT=json on every Hostplane container of every workload', async () => {
    const objects = await renderChart({ namespace: 'hostplane-logs' });
    const containers = hostplaneContainers(objects);
    // api, edge, controller, the SQLite shards and the migrations Job at least.
    expect(containers.length).toBeGreaterThanOrEqual(5);
    const formats = containers.map(({ where, container }) => [
      where,
      container.env?.filter((e) => e.name === 'HOSTPLANE_LOG_FORMAT').map((e) => e.value),
    ]);
    expect(formats).toEqual(containers.map(({ where }) => [where, ['json']]));
  });
});
