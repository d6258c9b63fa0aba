import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { renderChart, runHelm, valuesFile, CHART_DIR, REQUIRED_VALUES } from '../../support/kube/helm.js';

// The edge keeps large files (videos) on its pod's disk once read from S3: an emptyDir of its own,
// bounded by a value, mounted where HOSTPLANE_EDGE_DISK_CACHE_DIR says; off, nothing of it.

interface Container {
  name: string;
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
type Workload = KubernetesObject & {
  spec: {
    template: {
      spec: { containers: Container[]; volumes?: { name: string; emptyDir?: { sizeLimit?: string } }[] };
    };
  };
};

async function deployments(values: Record<string, unknown> = {}) {
  const objects = await renderChart({ namespace: 'hostplane-disk', values });
  const byRole = (role: string) =>
    objects.find((o) => o.kind === 'Deployment' && o.metadata?.name?.endsWith(`-${role}`)) as Workload;
  return { edge: byRole('edge'), api: byRole('api'), controller: byRole('controller') };
}

const envOf = (w: Workload) =>
  Object.fromEntries((w.spec.template.spec.containers[0]!.env ?? []).map((e) => [e.name, e.value]));

describe('the chart: the edge disk cache', () => {
  it('gives the edge an emptyDir with the sizeLimit value, mounted at the cache dir (on by default)', async () => {
    const { edge, api, controller } = await deployments();
    const volume = edge.spec.template.spec.volumes?.find((v) => v.name === 'disk-cache');
    expect(volume?.emptyDir?.sizeLimit).toBe('1280Mi');
    const mount = edge.spec.template.spec.containers[0]!.volumeMounts?.find((m) => m.name === 'disk-cache');
    expect(mount?.mountPath).toBe('/var/cache/hostplane-edge');
    expect(envOf(edge)).toMatchObject({
      HOSTPLANE_EDGE_DISK_CACHE_DIR: '/var/cache/hostplane-edge',
      HOSTPLANE_EDGE_DISK_CACHE_MB: '1024',
    });
    // The other roles serve no sites: no such volume, no such variables.
    for (const other of [api, controller]) {
      expect(other.spec.template.spec.volumes?.map((v) => v.name)).not.toContain('disk-cache');
      expect(Object.keys(envOf(other)).filter((n) => n.startsWith('HOSTPLANE_EDGE_DISK'))).toEqual([]);
    }
  });

  it('follows its values, and turns the cache off with no volume when disabled', async () => {
    const sized = await deployments({
      edge: { diskCache: { sizeMB: 4096, sizeLimit: '5Gi', mountPath: '/cache' } },
    });
    expect(sized.edge.spec.template.spec.volumes?.find((v) => v.name === 'disk-cache')?.emptyDir).toEqual({
      sizeLimit: '5Gi',
    });
    expect(envOf(sized.edge)).toMatchObject({
      HOSTPLANE_EDGE_DISK_CACHE_DIR: '/cache',
      HOSTPLANE_EDGE_DISK_CACHE_MB: '4096',
    });

    const off = await deployments({ edge: { diskCache: { enabled: false } } });
    expect(off.edge.spec.template.spec.volumes?.map((v) => v.name)).not.toContain('disk-cache');
    expect(envOf(off.edge).HOSTPLANE_EDGE_DISK_CACHE_MB).toBe('0');
    expect(envOf(off.edge).HOSTPLANE_EDGE_DISK_CACHE_DIR).toBeUndefined();
  });

  it('refuses a size that is not a quantity (values.schema.json)', async () => {
    const required = await valuesFile(REQUIRED_VALUES);
    const bad = await valuesFile({ edge: { diskCache: { sizeLimit: 'lots' } } });
    try {
      const result = await runHelm(['template', 'x', CHART_DIR, '-f', required.file, '-f', bad.file]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('sizeLimit');
    } finally {
      await bad.remove();
      await required.remove();
    }
  });
});
