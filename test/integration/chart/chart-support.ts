import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect } from 'vitest';
import { applyObjects, ensureNamespace, installCrds, monitoringTestCrds } from '../../support/kube/apply.js';
import { startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';
import {
  chartCrds,
  componentObjects,
  containerEnv,
  describeObject,
  findObject,
  renderChart,
  type Values,
} from '../../support/kube/helm.js';

// Shared by chart-values.test.ts, chart-rbac.test.ts and chart-deploy.test.ts: the release and
// namespace they render into, a kube-apiserver with the chart's CRDs, the loose shapes of what the
// chart renders, and the properties every rendering must have (checked on each rendering).

export const NAMESPACE = 'hostplane-system';
export const RELEASE = 'hostplane';

// Live binding: set by useChartTestEnv()'s beforeAll, read by the test files that import it.
export let env: KubeTestEnv;

/** Starts the calling test file's kube-apiserver (startChartTestEnv) before its tests, stops it after. */
export function useChartTestEnv(): void {
  beforeAll(async () => {
    env = await startChartTestEnv();
  });
  afterAll(async () => {
    await env?.stop();
  });
}

/** renderAndValidateOn the calling file's kube-apiserver (useChartTestEnv). */
export const renderAndValidate = (values: Values): Promise<KubernetesObject[]> =>
  renderAndValidateOn(env, values);

/** A real kube-apiserver with the chart's CRDs (and the monitoring stand-ins) and NAMESPACE. */
export async function startChartTestEnv(): Promise<KubeTestEnv> {
  const env = await startKubeTestEnv();
  try {
    await installCrds(env, [...(await chartCrds()), ...monitoringTestCrds()]);
    await ensureNamespace(env, NAMESPACE);
  } catch (err) {
    await env.stop();
    throw err;
  }
  return env;
}

// Loose shapes of what the chart renders (only the fields the assertions read).
export interface Container {
  name: string;
  image?: string;
  args?: string[];
  command?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    privileged?: boolean;
  };
  volumeMounts?: { name: string; mountPath: string }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
}
export interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; emptyDir?: object }[];
}
export type Workload = KubernetesObject & {
  spec: { replicas?: number; template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec } };
};
type PodObject = KubernetesObject & { spec: PodSpec };
interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}
type Role = KubernetesObject & { rules: PolicyRule[] };
export type Service = KubernetesObject & {
  spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
};

export const podSpecOf = (o: KubernetesObject): PodSpec =>
  o.kind === 'Pod' ? (o as PodObject).spec : (o as Workload).spec.template.spec;

export const deployment = (objects: KubernetesObject[], component: string): Workload => {
  const [d] = componentObjects<Workload>(objects, 'Deployment', component);
  if (!d) throw new Error(`no ${component} Deployment`);
  return d;
};

export const envVar = (container: Container | undefined, name: string) =>
  container?.env?.find((e) => e.name === name);

/** Properties every rendering must have, whatever the values. */
function assertInvariants(objects: KubernetesObject[], values: Values): void {
  // Standard labels and the release namespace on every object.
  for (const o of objects) {
    const labels = o.metadata?.labels ?? {};
    expect(labels, describeObject(o)).toMatchObject({
      'app.kubernetes.io/name': 'hostplane',
      'app.kubernetes.io/instance': RELEASE,
      'app.kubernetes.io/managed-by': 'Helm',
      'app.kubernetes.io/version': '0.1.0',
      'helm.sh/chart': 'hostplane-0.3.0',
    });
    // The CRDs (crds.enabled) are the only cluster-scoped objects.
    if (o.kind !== 'CustomResourceDefinition')
      expect(o.metadata?.namespace, describeObject(o)).toBe(NAMESPACE);
  }
  // No cluster-wide permissions: namespaced Roles only.
  expect(objects.filter((o) => /^Cluster/.test(o.kind ?? ''))).toEqual([]);

  // Every pod (Deployments, the sqlite StatefulSet, the migrate Job, the test Pod) runs locked
  // down, init containers included.
  const pods = objects.filter((o) => ['Deployment', 'StatefulSet', 'Job', 'Pod'].includes(o.kind ?? ''));
  expect(pods.length).toBeGreaterThanOrEqual(6);
  for (const o of pods) {
    const spec = podSpecOf(o);
    expect(spec.securityContext, describeObject(o)).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 10001,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
      expect(c.securityContext, `${describeObject(o)} ${c.name}`).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 10001,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
      expect(c.securityContext?.capabilities?.add).toBeUndefined();
      expect(c.resources?.requests, `${describeObject(o)} ${c.name}`).toBeDefined();
      expect(c.resources?.limits?.memory, `${describeObject(o)} ${c.name}`).toBeDefined();
    }
  }

  // The three roles of the one binary, each with probes, /tmp on an emptyDir and its own ServiceAccount.
  for (const component of ['api', 'edge', 'controller']) {
    const d = deployment(objects, component);
    const spec = d.spec.template.spec;
    const [c] = spec.containers;
    expect(c?.args).toEqual(['serve', '--role', component]);
    expect(c?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(c?.volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
    expect(spec.volumes?.find((v) => v.name === 'tmp')?.emptyDir).toBeDefined();
    expect(envVar(c, 'DATABASE_URL')?.valueFrom?.secretKeyRef).toBeDefined();
    expect(envVar(c, 'DATABASE_URL')?.value).toBeUndefined();
    const sa = findObject(objects, 'ServiceAccount', spec.serviceAccountName);
    expect(sa.metadata?.labels?.['app.kubernetes.io/component']).toBe(component);
    // Cluster mode for the roles that talk to the Kubernetes API; the edge never does.
    expect(envVar(c, 'HOSTPLANE_KUBERNETES')?.value).toBe(component === 'edge' ? undefined : 'true');
    const pdbEnabled =
      (values[component] as { pdb?: { enabled?: boolean } } | undefined)?.pdb?.enabled ?? true;
    expect(componentObjects(objects, 'PodDisruptionBudget', component)).toHaveLength(pdbEnabled ? 1 : 0);
  }

  // The edge and the sqlite shards have no token and no Role.
  const [shards] = componentObjects<Workload>(objects, 'StatefulSet', 'sqlite');
  for (const workload of [deployment(objects, 'edge'), shards]) {
    if (!workload) throw new Error('no sqlite StatefulSet');
    const spec = workload.spec.template.spec;
    expect(spec.automountServiceAccountToken, describeObject(workload)).toBe(false);
    const sa = findObject(objects, 'ServiceAccount', spec.serviceAccountName) as {
      automountServiceAccountToken?: boolean;
    };
    expect(sa.automountServiceAccountToken, describeObject(workload)).toBe(false);
  }
  expect(componentObjects(objects, 'Role', 'edge')).toEqual([]);
  expect(componentObjects(objects, 'Role', 'sqlite')).toEqual([]);
  const bound = objects
    .filter((o) => o.kind === 'RoleBinding')
    .flatMap((o) => (o as { subjects?: { name: string }[] }).subjects ?? [])
    .map((subject) => subject.name);
  expect(bound).not.toContain(shards?.spec.template.spec.serviceAccountName);

  // The site Ingresses the controller makes point at the edge Service the chart makes.
  const [edgeService] = componentObjects<Service>(objects, 'Service', 'edge');
  for (const component of ['controller', 'api']) {
    const d = deployment(objects, component);
    expect(containerEnv(d, 'HOSTPLANE_EDGE_SERVICE')).toBe(edgeService?.metadata?.name);
    expect(containerEnv(d, 'HOSTPLANE_EDGE_SERVICE_PORT')).toBe(String(edgeService?.spec.ports[0]?.port));
    const [c] = d.spec.template.spec.containers;
    expect(envVar(c, 'HOSTPLANE_NAMESPACE')?.valueFrom).toEqual({
      fieldRef: { fieldPath: 'metadata.namespace' },
    });
    expect(envVar(c, 'HOSTPLANE_POD_NAME')?.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
  }
  // Service selectors match their Deployment's pods.
  for (const component of ['api', 'edge']) {
    const [svc] = componentObjects<Service>(objects, 'Service', component);
    const podLabels = deployment(objects, component).spec.template.metadata?.labels ?? {};
    expect(podLabels).toMatchObject(svc?.spec.selector ?? { missing: 'service' });
  }

  // Least privilege: explicit verbs, resources and groups; the Lease rule names our Lease only.
  const roles = objects.filter((o) => o.kind === 'Role') as Role[];
  expect(roles.map((r) => r.metadata?.labels?.['app.kubernetes.io/component']).sort()).toEqual([
    'api',
    'controller',
  ]);
  for (const role of roles) {
    for (const rule of role.rules) {
      for (const field of [rule.verbs, rule.resources ?? [], rule.apiGroups ?? []]) {
        expect(field, describeObject(role)).not.toContain('*');
      }
    }
  }
  const [controllerRole] = componentObjects<Role>(objects, 'Role', 'controller');
  const leaseRules = controllerRole?.rules.filter((r) => r.resources?.includes('leases')) ?? [];
  expect(leaseRules.find((r) => r.verbs.includes('update'))?.resourceNames).toEqual([
    containerEnv(deployment(objects, 'controller'), 'HOSTPLANE_LEASE_NAME'),
  ]);
}

/**
 * Renders with `values`, dry-runs every object against `env`'s API server, asserts the invariants.
 * Each test file binds its own env: `const renderAndValidate = (v) => renderAndValidateOn(env, v)`.
 */
export async function renderAndValidateOn(env: KubeTestEnv, values: Values): Promise<KubernetesObject[]> {
  const objects = await renderChart({ namespace: NAMESPACE, values, releaseName: RELEASE });
  const results = await applyObjects(env, objects, { dryRun: true });
  const rejected = results.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`);
  expect(rejected).toEqual([]);
  assertInvariants(objects, values);
  return objects;
}
