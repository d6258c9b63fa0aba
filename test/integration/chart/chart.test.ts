import { AuthorizationV1Api, CoordinationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';
import { EXTRA_FILE_TYPES } from '../../../src/files/index.js';
import {
  applyObjects,
  ensureNamespace,
  installChartRbac,
  installCrds,
  monitoringTestCrds,
  type ChartRbac,
} from '../../support/kube/apply.js';
import {
  CHART_DIR,
  KUBE_VERSION,
  chartCrds,
  componentObjects,
  containerEnv,
  describeObject,
  findObject,
  parseManifests,
  REQUIRED_VALUES,
  renderChart,
  runHelm,
  valuesFile,
  type Values,
} from '../../support/kube/helm.js';

// The chart against the real tools: helm lint/template, and a real kube-apiserver that validates
// every rendered object (server-side apply, dry run) and authorizes the chart's ServiceAccounts.

const NAMESPACE = 'hostplane-system';
const RELEASE = 'hostplane';

let env: KubeTestEnv;

beforeAll(async () => {
  env = await startKubeTestEnv();
  await installCrds(env, [...(await chartCrds()), ...monitoringTestCrds()]);
  await ensureNamespace(env, NAMESPACE);
});

afterAll(async () => {
  await env?.stop();
});

// Loose shapes of what the chart renders (only the fields the assertions read).
interface Container {
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
interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; emptyDir?: object }[];
}
type Workload = KubernetesObject & {
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
type Service = KubernetesObject & {
  spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
};

const podSpecOf = (o: KubernetesObject): PodSpec =>
  o.kind === 'Pod' ? (o as PodObject).spec : (o as Workload).spec.template.spec;

const deployment = (objects: KubernetesObject[], component: string): Workload => {
  const [d] = componentObjects<Workload>(objects, 'Deployment', component);
  if (!d) throw new Error(`no ${component} Deployment`);
  return d;
};

const envVar = (container: Container | undefined, name: string) =>
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

/** Renders with `values`, dry-runs every object against the API server, asserts the invariants. */
async function renderAndValidate(values: Values): Promise<KubernetesObject[]> {
  const objects = await renderChart({ namespace: NAMESPACE, values, releaseName: RELEASE });
  const results = await applyObjects(env, objects, { dryRun: true });
  const rejected = results.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`);
  expect(rejected).toEqual([]);
  assertInvariants(objects, values);
  return objects;
}

describe('helm lint', () => {
  it('passes with the default values plus the required ones, also with --strict', async () => {
    const required = await valuesFile(REQUIRED_VALUES);
    try {
      for (const args of [
        ['lint', CHART_DIR, '--values', required.file],
        ['lint', '--strict', '--kube-version', KUBE_VERSION, CHART_DIR, '--values', required.file],
      ]) {
        const result = await runHelm(args);
        expect(result.code, `helm ${args.join(' ')}\n${result.stdout}${result.stderr}`).toBe(0);
        expect(result.stdout).toContain('0 chart(s) failed');
      }
    } finally {
      await required.remove();
    }
  });

  it.each([
    ['an unknown log level', { config: { logLevel: 'loud' } }, 'logLevel'],
    ['no database Secret', { database: { existingSecret: '' } }, 'existingSecret'],
    ['a string where a boolean belongs', { edge: { autoscaling: { enabled: 'yes' } } }, 'enabled'],
    ['an unknown top-level key', { replicas: 3 }, 'replicas'],
    ['a base URL with a path', { config: { baseUrl: 'https://example.com/api' } }, 'baseUrl'],
  ])('fails for values with %s (values.schema.json)', async (_what, values, mentioned) => {
    const { file, remove } = await valuesFile(values);
    const required = await valuesFile(REQUIRED_VALUES);
    try {
      const result = await runHelm([
        'lint',
        '--strict',
        CHART_DIR,
        '--values',
        required.file,
        '--values',
        file,
      ]);
      expect(result.code).not.toBe(0);
      const output = result.stdout + result.stderr;
      expect(output).toMatch(/schema/i);
      expect(output).toContain(mentioned);
    } finally {
      await remove();
      await required.remove();
    }
  });
});

describe('helm template, validated by a real API server', () => {
  it('defaults: HPA on the edge, API Ingress without TLS, no monitoring or NetworkPolicy', async () => {
    const objects = await renderAndValidate({});
    const kinds = new Set(objects.map((o) => o.kind));
    expect(kinds).not.toContain('ServiceMonitor');
    expect(kinds).not.toContain('PrometheusRule');
    expect(kinds).not.toContain('NetworkPolicy');
    expect(kinds).not.toContain('Secret'); // secrets are referenced, never created

    const hpa = findObject(objects, 'HorizontalPodAutoscaler') as KubernetesObject & {
      spec: { scaleTargetRef: { name: string }; minReplicas: number };
    };
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec.scaleTargetRef.name).toBe(deployment(objects, 'edge').metadata?.name);
    expect(deployment(objects, 'edge').spec.replicas).toBeUndefined();
    expect(deployment(objects, 'controller').spec.replicas).toBe(2);

    const ingress = findObject(objects, 'Ingress') as KubernetesObject & {
      spec: { tls?: unknown; rules: { host: string }[] };
    };
    expect(ingress.spec.rules[0]?.host).toBe('api.hostplane.example');
    expect(ingress.spec.tls).toBeUndefined();

    // Migrations run once per install/upgrade as a hook; `helm test` checks the API's /readyz.
    const job = findObject(objects, 'Job');
    expect(job.metadata?.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(podSpecOf(job).containers[0]?.args).toEqual(['migrate']);
    const testPod = findObject(objects, 'Pod');
    expect(testPod.metadata?.annotations?.['helm.sh/hook']).toBe('test');
    expect(podSpecOf(testPod).containers[0]?.command?.at(-1)).toBe(
      `http://hostplane-api.${NAMESPACE}.svc:80/readyz`,
    );
  });

  it('TLS on the API Ingress', async () => {
    const objects = await renderAndValidate({
      config: { baseUrl: 'https://api.example.org' },
      ingress: {
        className: 'nginx',
        annotations: { 'cert-manager.io/cluster-issuer': 'letsencrypt' },
        tls: { enabled: true },
      },
    });
    const ingress = findObject(objects, 'Ingress') as KubernetesObject & {
      spec: {
        ingressClassName: string;
        tls: { hosts: string[]; secretName: string }[];
        rules: { host: string }[];
      };
    };
    expect(ingress.spec.ingressClassName).toBe('nginx');
    expect(ingress.spec.rules[0]?.host).toBe('api.example.org');
    expect(ingress.spec.tls).toEqual([{ hosts: ['api.example.org'], secretName: 'hostplane-api-tls' }]);
    expect(ingress.metadata?.annotations).toEqual({ 'cert-manager.io/cluster-issuer': 'letsencrypt' });
    // Site Ingresses default to the same class.
    expect(containerEnv(deployment(objects, 'controller'), 'HOSTPLANE_INGRESS_CLASS')).toBe('nginx');
  });

  it('the account area: sign-up mode, domain proof and the sites cap reach the api pods', async () => {
    const objects = await renderAndValidate({
      accounts: {
        signup: 'open',
        domainVerification: 'off',
        maxSitesPerAccount: 7,
        plansContact: 'mailto:sales@example.com',
      },
    });
    const api = deployment(objects, 'api');
    expect(containerEnv(api, 'HOSTPLANE_PLANS_CONTACT')).toBe('mailto:sales@example.com');
    expect(containerEnv(api, 'HOSTPLANE_SIGNUP')).toBe('open');
    expect(containerEnv(api, 'HOSTPLANE_DOMAIN_VERIFICATION')).toBe('off');
    expect(containerEnv(api, 'HOSTPLANE_MAX_SITES_PER_ACCOUNT')).toBe('7');
  });

  it('files.extraTypes: the operator’s extra file types reach the api pods; none by default; others refused', async () => {
    const objects = await renderAndValidate({ files: { extraTypes: ['map', 'mjs', 'webmanifest', 'wasm'] } });
    expect(containerEnv(deployment(objects, 'api'), 'HOSTPLANE_EXTRA_FILE_TYPES')).toBe(
      'map,mjs,webmanifest,wasm',
    );
    expect(containerEnv(deployment(objects, 'edge'), 'HOSTPLANE_EXTRA_FILE_TYPES')).toBeUndefined();
    const defaults = await renderAndValidate({});
    expect(containerEnv(deployment(defaults, 'api'), 'HOSTPLANE_EXTRA_FILE_TYPES')).toBeUndefined();
    // The schema knows the types the server can serve: a page type is refused at install.
    const refused = await renderChart({
      namespace: NAMESPACE,
      values: { files: { extraTypes: ['php'] } },
    }).then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(refused).toMatch(/extraTypes/);
    // …the ones the server serves, no more and no fewer (src/files/file-types.ts).
    const schema = JSON.parse(await readFile(path.join(CHART_DIR, 'values.schema.json'), 'utf8')) as {
      properties: { files: { properties: { extraTypes: { items: { enum: string[] } } } } };
    };
    expect(schema.properties.files.properties.extraTypes.items.enum).toEqual(Object.keys(EXTRA_FILE_TYPES));
  });

  it('monitoring on: a ServiceMonitor for the four roles and Litestream, a PrometheusRule with six alerts', async () => {
    const objects = await renderAndValidate({
      monitoring: {
        serviceMonitor: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
        prometheusRule: { enabled: true },
      },
    });
    const monitor = findObject(objects, 'ServiceMonitor') as KubernetesObject & {
      spec: {
        selector: { matchLabels: Record<string, string>; matchExpressions: { values: string[] }[] };
        endpoints: { port: string; path: string }[];
      };
    };
    expect(monitor.metadata?.labels?.release).toBe('kube-prometheus-stack');
    expect(monitor.spec.endpoints).toMatchObject([
      { port: 'metrics', path: '/metrics' },
      { port: 'litestream', path: '/metrics' },
    ]);
    // It selects exactly the Services of the four roles, each of which has a port named metrics.
    const selected = (objects as Service[]).filter(
      (o) =>
        o.kind === 'Service' &&
        Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata?.labels?.[k] === v) &&
        monitor.spec.selector.matchExpressions[0]?.values.includes(
          o.metadata?.labels?.['app.kubernetes.io/component'] ?? '',
        ),
    );
    expect(selected.map((s) => s.metadata?.labels?.['app.kubernetes.io/component']).sort()).toEqual([
      'api',
      'controller',
      'edge',
      'sqlite',
    ]);
    for (const svc of selected) expect(svc.spec.ports.map((p) => p.name)).toContain('metrics');

    const rule = findObject(objects, 'PrometheusRule') as KubernetesObject & {
      spec: { groups: { rules: { alert: string; expr: string }[] }[] };
    };
    const alerts = rule.spec.groups.flatMap((g) => g.rules);
    expect(alerts.map((a) => a.alert)).toEqual([
      'HostplaneControllerReconcileErrors',
      'HostplaneHighHttp5xxRatio',
      'HostplaneEdgeHighLatency',
      'HostplaneSqliteReplicationLag',
      'HostplaneSqliteRestoreFailed',
      'HostplaneLitestreamSyncErrors',
      'HostplaneSqliteShardLost',
      'HostplaneSqliteFailoverBlocked',
    ]);
    expect(alerts[0]?.expr).toContain('hostplane_controller_reconcile_total{result="error"');
    expect(alerts[1]?.expr).toContain('hostplane_http_requests_total{status=~"5.."');
    expect(alerts[2]?.expr).toContain('hostplane_http_request_duration_seconds_bucket{role="edge"');
    expect(alerts[2]?.expr).toContain('histogram_quantile(0.99');
  });

  it('external PostgreSQL, S3 and SMTP through existing Secrets', async () => {
    const objects = await renderAndValidate({
      database: { existingSecret: 'pg-credentials', secretKey: 'uri' },
      s3: {
        existingSecret: 's3-credentials',
        accessKeyIdKey: 'access-key',
        secretAccessKeyKey: 'secret-key',
        endpoint: 'https://s3.eu-central-1.example.net',
        bucket: 'hostplane-sites',
        region: 'eu-central-1',
        forcePathStyle: true,
      },
      smtp: { existingSecret: 'smtp-credentials', secretKey: 'url' },
    });
    for (const component of ['api', 'edge', 'controller']) {
      const [c] = deployment(objects, component).spec.template.spec.containers;
      expect(envVar(c, 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
        name: 'pg-credentials',
        key: 'uri',
      });
      expect(envVar(c, 'AWS_ACCESS_KEY_ID')?.valueFrom?.secretKeyRef).toEqual({
        name: 's3-credentials',
        key: 'access-key',
      });
      expect(envVar(c, 'AWS_SECRET_ACCESS_KEY')?.valueFrom?.secretKeyRef).toEqual({
        name: 's3-credentials',
        key: 'secret-key',
      });
      expect(envVar(c, 'S3_ENDPOINT')?.value).toBe('https://s3.eu-central-1.example.net');
      expect(envVar(c, 'S3_BUCKET')?.value).toBe('hostplane-sites');
      expect(envVar(c, 'S3_REGION')?.value).toBe('eu-central-1');
      expect(envVar(c, 'S3_FORCE_PATH_STYLE')?.value).toBe('true');
      // Mail goes out from the api only.
      expect(envVar(c, 'SMTP_URL')?.valueFrom?.secretKeyRef).toEqual(
        component === 'api' ? { name: 'smtp-credentials', key: 'url' } : undefined,
      );
      // The account area's switches, read by the api (the account API and `admin invite`).
      expect(envVar(c, 'HOSTPLANE_SIGNUP')?.value).toBe(component === 'api' ? 'invite' : undefined);
      expect(envVar(c, 'HOSTPLANE_DOMAIN_VERIFICATION')?.value).toBe(component === 'api' ? 'dns' : undefined);
    }
    const [migrate] = podSpecOf(findObject(objects, 'Job')).containers;
    expect(envVar(migrate, 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
      name: 'pg-credentials',
      key: 'uri',
    });

    // Without a static-key Secret the SDK's default chain (IRSA, Pod Identity) is left to work.
    const keyless = await renderChart({ namespace: NAMESPACE, values: { s3: { existingSecret: '' } } });
    const [api] = deployment(keyless, 'api').spec.template.spec.containers;
    expect(envVar(api, 'AWS_ACCESS_KEY_ID')).toBeUndefined();
  });

  it('NetworkPolicy on: api and edge open on their port, the controller only for metrics (sqlite: sqlite-monitoring.test.ts)', async () => {
    const metricsFrom = [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ];
    const postgres = {
      to: [{ ipBlock: { cidr: '10.20.0.0/16' } }],
      ports: [{ port: 5432, protocol: 'TCP' }],
    };
    const objects = await renderAndValidate({
      networkPolicy: { enabled: true, metricsFrom, egress: { restrict: true, rules: [postgres] } },
    });
    type Policy = KubernetesObject & {
      spec: {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: { from?: unknown[]; ports: { port: string | number }[] }[];
        egress?: unknown[];
      };
    };
    expect(objects.filter((o) => o.kind === 'NetworkPolicy')).toHaveLength(4);
    for (const component of ['api', 'edge', 'controller']) {
      const [policy] = componentObjects<Policy>(objects, 'NetworkPolicy', component);
      if (!policy) throw new Error(`no NetworkPolicy for ${component}`);
      const podLabels = deployment(objects, component).spec.template.metadata?.labels ?? {};
      expect(podLabels).toMatchObject(policy.spec.podSelector.matchLabels);
      expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
      // api and edge: their public port from anywhere; every component: metrics from metricsFrom only.
      const publicRules = component === 'controller' ? [] : [{ ports: [{ port: 'http', protocol: 'TCP' }] }];
      expect(policy.spec.ingress).toEqual([
        ...publicRules,
        { ports: [{ port: 'metrics', protocol: 'TCP' }], from: metricsFrom },
      ]);
      expect(policy.spec.egress).toContainEqual(postgres);
    }
  });

  it('autoscaling off: a fixed number of edge replicas and no HPA', async () => {
    const objects = await renderAndValidate({ edge: { autoscaling: { enabled: false }, replicaCount: 3 } });
    expect(objects.filter((o) => o.kind === 'HorizontalPodAutoscaler')).toEqual([]);
    expect(deployment(objects, 'edge').spec.replicas).toBe(3);
  });
});

describe('RBAC with the real authorizer', () => {
  const namespace = 'hostplane-rbac';
  const otherNamespace = 'someone-else';
  let rbac: ChartRbac;

  beforeAll(async () => {
    rbac = await installChartRbac(env, namespace);
    await ensureNamespace(env, otherNamespace);
  });

  interface Check {
    verb: string;
    resource: string;
    group?: string;
    subresource?: string;
    name?: string;
    namespace?: string;
  }
  const key = (c: Check) =>
    `${c.verb} ${c.group ? `${c.group}/` : ''}${c.resource}${c.subresource ? `/${c.subresource}` : ''}` +
    `${c.name ? ` "${c.name}"` : ''} in ${c.namespace ?? namespace}`;

  /** SelfSubjectAccessReview as the token's ServiceAccount: which checks are allowed. */
  async function allowed(token: string, checks: Check[]): Promise<Record<string, boolean>> {
    const authz = env.kubeConfig(token).makeApiClient(AuthorizationV1Api);
    const entries = await Promise.all(
      checks.map(async (c) => {
        const review = await authz.createSelfSubjectAccessReview({
          body: {
            spec: {
              resourceAttributes: {
                verb: c.verb,
                group: c.group ?? '',
                resource: c.resource,
                subresource: c.subresource,
                name: c.name,
                namespace: c.namespace ?? namespace,
              },
            },
          },
        });
        return [key(c), review.status?.allowed === true] as const;
      }),
    );
    return Object.fromEntries(entries);
  }
  const expectAll = (result: Record<string, boolean>, value: boolean) =>
    expect(result).toEqual(Object.fromEntries(Object.keys(result).map((k) => [k, value])));

  const hp = 'hostplane.dev';
  const each = (verbs: string[], c: Omit<Check, 'verb'>): Check[] => verbs.map((verb) => ({ verb, ...c }));

  it('the controller may do exactly what it needs in its namespace', async () => {
    const needed: Check[] = [
      // create: the resync gives every database site without a Site resource one.
      ...each(['list', 'watch', 'create', 'patch'], { group: hp, resource: 'sites' }),
      ...each(['update'], { group: hp, resource: 'sites', subresource: 'status' }),
      ...each(['update'], { group: hp, resource: 'sites', subresource: 'finalizers' }),
      ...each(['get', 'list', 'watch', 'create', 'patch', 'delete'], { group: hp, resource: 'forms' }),
      ...each(['update'], { group: hp, resource: 'forms', subresource: 'status' }),
      ...each(['get', 'list', 'watch', 'create', 'patch', 'delete'], {
        group: hp,
        resource: 'sqlitedatabases',
      }),
      ...each(['update'], { group: hp, resource: 'sqlitedatabases', subresource: 'status' }),
      ...each(['get', 'list', 'watch', 'create', 'patch', 'delete'], {
        group: 'networking.k8s.io',
        resource: 'ingresses',
      }),
      // API-key Secrets of adopted sites, deleted with deletionPolicy Delete; never listed.
      ...each(['get', 'create', 'delete'], { resource: 'secrets' }),
      ...each(['create'], { resource: 'events' }),
      ...each(['create'], { group: 'coordination.k8s.io', resource: 'leases' }),
      ...each(['get', 'update'], { group: 'coordination.k8s.io', resource: 'leases', name: rbac.leaseName }),
    ];
    expectAll(await allowed(rbac.controllerToken, needed), true);

    const denied: Check[] = [
      ...each(['list', 'watch', 'update', 'patch', 'deletecollection'], { resource: 'secrets' }),
      ...each(['update', 'delete', 'deletecollection'], { group: hp, resource: 'sites' }),
      ...each(['patch'], { group: hp, resource: 'sites', subresource: 'status' }),
      ...each(['update', 'deletecollection'], { group: hp, resource: 'forms' }),
      ...each(['patch'], { group: hp, resource: 'forms', subresource: 'status' }),
      ...each(['update'], { group: hp, resource: 'forms', subresource: 'finalizers' }),
      ...each(['update', 'deletecollection'], { group: hp, resource: 'sqlitedatabases' }),
      ...each(['patch'], { group: hp, resource: 'sqlitedatabases', subresource: 'status' }),
      ...each(['update'], { group: hp, resource: 'sqlitedatabases', subresource: 'finalizers' }),
      ...each(['update'], { group: 'networking.k8s.io', resource: 'ingresses' }),
      ...each(['get', 'create', 'delete'], { resource: 'pods' }),
      ...each(['get'], { resource: 'configmaps' }),
      ...each(['get', 'list'], { group: hp, resource: 'sites', namespace: otherNamespace }),
      ...each(['create'], { group: 'networking.k8s.io', resource: 'ingresses', namespace: otherNamespace }),
      ...each(['get', 'update', 'delete'], {
        group: 'coordination.k8s.io',
        resource: 'leases',
        name: 'other-lease',
      }),
      ...each(['list', 'watch'], { group: 'coordination.k8s.io', resource: 'leases' }),
      ...each(['create', 'list'], { group: 'rbac.authorization.k8s.io', resource: 'clusterroles' }),
      ...each(['create'], { group: 'rbac.authorization.k8s.io', resource: 'rolebindings' }),
      ...each(['deletecollection'], { group: 'networking.k8s.io', resource: 'ingresses' }),
    ];
    expectAll(await allowed(rbac.controllerToken, denied), false);
  });

  it("the controller's token works for leader election on its own Lease only", async () => {
    const leases = env.kubeConfig(rbac.controllerToken).makeApiClient(CoordinationV1Api);
    const holder = 'hostplane-controller-0';
    await leases.createNamespacedLease({
      namespace,
      body: {
        metadata: { name: rbac.leaseName },
        spec: { holderIdentity: holder, leaseDurationSeconds: 15 },
      },
    });
    const lease = await leases.readNamespacedLease({ name: rbac.leaseName, namespace });
    expect(lease.spec?.holderIdentity).toBe(holder);
    // (No renewTime here: client-node serializes Dates with milliseconds, MicroTime wants microseconds.)
    lease.spec = { ...lease.spec, holderIdentity: 'hostplane-controller-1', leaseTransitions: 1 };
    const renewed = await leases.replaceNamespacedLease({ name: rbac.leaseName, namespace, body: lease });
    expect(renewed.spec?.holderIdentity).toBe('hostplane-controller-1');
    await expect(leases.readNamespacedLease({ name: 'other-lease', namespace })).rejects.toMatchObject({
      code: 403,
    });
  });

  it('the api may create, find, patch and delete Sites and write Forms; the edge may do nothing', async () => {
    expectAll(
      await allowed(rbac.apiToken, [
        // patch: a custom domain attached or removed through the account API goes into the Site's
        // spec.customDomains; patch and delete: a site deleted through the account API.
        ...each(['get', 'list', 'create', 'patch', 'delete'], { group: hp, resource: 'sites' }),
        ...each(['get', 'list', 'create', 'patch', 'delete'], { group: hp, resource: 'forms' }),
        ...each(['get', 'list', 'create'], { group: hp, resource: 'sqlitedatabases' }),
      ]),
      true,
    );
    expectAll(
      await allowed(rbac.apiToken, [
        ...each(['update', 'watch'], { group: hp, resource: 'sites' }),
        ...each(['update'], { group: hp, resource: 'sites', subresource: 'status' }),
        ...each(['update', 'watch'], { group: hp, resource: 'forms' }),
        ...each(['update'], { group: hp, resource: 'forms', subresource: 'status' }),
        ...each(['patch', 'update', 'delete', 'watch'], { group: hp, resource: 'sqlitedatabases' }),
        ...each(['get', 'create'], { resource: 'secrets' }),
        ...each(['create'], { group: 'networking.k8s.io', resource: 'ingresses' }),
        ...each(['create'], { group: hp, resource: 'sites', namespace: otherNamespace }),
        ...each(['get'], { group: hp, resource: 'forms', namespace: otherNamespace }),
      ]),
      false,
    );

    // The edge's ServiceAccount has no binding: a SubjectAccessReview (as admin) says no to everything.
    const authz = env.kubeConfig().makeApiClient(AuthorizationV1Api);
    const edgeUser = `system:serviceaccount:${namespace}:${RELEASE}-edge`;
    for (const check of [
      { verb: 'get', group: hp, resource: 'sites' },
      { verb: 'get', group: '', resource: 'secrets' },
      { verb: 'list', group: 'networking.k8s.io', resource: 'ingresses' },
    ]) {
      const review = await authz.createSubjectAccessReview({
        body: {
          spec: {
            user: edgeUser,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
            resourceAttributes: { ...check, namespace },
          },
        },
      });
      expect(review.status?.allowed, `${edgeUser} ${check.verb} ${check.resource}`).toBe(false);
    }
  });
});

describe('deploy/: kind values and manifests, example Sites, Dockerfile', () => {
  const repo = (file: string) => path.join(CHART_DIR, '..', '..', file);
  const readManifests = async (file: string) => parseManifests(await readFile(repo(file), 'utf8'));

  it('the kind values render and validate, and reference the Secrets of the kind PostgreSQL and MinIO', async () => {
    const values = parse(await readFile(repo('deploy/kind/values.yaml'), 'utf8')) as Values;
    const objects = await renderAndValidate(values);
    expect(deployment(objects, 'controller').spec.template.spec.containers[0]?.image).toBe('hostplane:dev');

    const namespace = 'hostplane-kind';
    await ensureNamespace(env, namespace);
    const infra = [
      ...(await readManifests('deploy/kind/postgres.yaml')),
      ...(await readManifests('deploy/kind/minio.yaml')),
    ].map((o) => ({ ...o, metadata: { ...o.metadata, namespace } }));
    const results = await applyObjects(env, infra, { dryRun: true });
    expect(results.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`)).toEqual([]);

    // Every Secret key the chart's pods read exists in the kind Secrets.
    const secrets = new Map(
      infra
        .filter((o) => o.kind === 'Secret')
        .map((o) => [o.metadata?.name, (o as { stringData?: Record<string, string> }).stringData ?? {}]),
    );
    const [api] = deployment(objects, 'api').spec.template.spec.containers;
    const refs = (api?.env ?? []).flatMap((e) =>
      e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [],
    );
    expect(refs.length).toBeGreaterThanOrEqual(3);
    for (const ref of refs) expect(secrets.get(ref.name), `${ref.name}/${ref.key}`).toHaveProperty(ref.key);
    // ...and the database URL points at the kind PostgreSQL Service.
    expect(secrets.get('hostplane-database')?.DATABASE_URL).toMatch(/@postgres:5432\//);
    expect(envVar(api, 'S3_ENDPOINT')?.value).toBe('http://minio:9000');
  });

  it('kind maps ports 80 and 443 to the node labelled ingress-ready', async () => {
    const cluster = parse(await readFile(repo('deploy/kind/cluster.yaml'), 'utf8')) as {
      kind: string;
      nodes: {
        kubeadmConfigPatches: string[];
        extraPortMappings: { containerPort: number; hostPort: number }[];
      }[];
    };
    expect(cluster.kind).toBe('Cluster');
    const [node] = cluster.nodes;
    expect(node?.extraPortMappings.map((m) => [m.containerPort, m.hostPort])).toEqual([
      [80, 80],
      [443, 443],
    ]);
    expect(node?.kubeadmConfigPatches.join('\n')).toContain('node-labels: "ingress-ready=true"');
  });

  it('the example Sites are valid Site resources', async () => {
    const files = (await readdir(repo('deploy/examples'))).filter((f) => f.endsWith('.yaml')).sort();
    expect(files).toEqual(['site-basic.yaml', 'site-custom-domains-tls.yaml', 'site-delete-policy.yaml']);
    const sites: KubernetesObject[] = [];
    for (const file of files) sites.push(...(await readManifests(`deploy/examples/${file}`)));
    expect(sites.map((o) => o.kind)).toEqual(['Site', 'Site', 'Site']);
    const dryRun = await applyObjects(
      env,
      sites.map((o) => ({ ...o, metadata: { ...o.metadata, namespace: NAMESPACE } })),
      { dryRun: true },
    );
    expect(dryRun.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`)).toEqual([]);

    // The answer is the object as it would be stored: the CRD's defaults are applied.
    const specs = dryRun.map((r) => (r.applied as { spec?: Record<string, unknown> } | undefined)?.spec);
    expect(specs.map((s) => s?.deletionPolicy)).toEqual(['Retain', 'Retain', 'Delete']);
    expect(specs[1]).toEqual({
      slug: 'docs',
      customDomains: ['docs.example.com', 'www.docs.example.com'],
      tls: { issuerName: 'letsencrypt-prod', issuerKind: 'ClusterIssuer' },
      owner: { email: 'docs-team@example.com', plan: 'standard' },
      deletionPolicy: 'Retain',
    });

    // A Site the CRD must refuse, to show the dry run validates.
    const [bad] = await applyObjects(
      env,
      [
        {
          ...sites[0],
          metadata: { name: 'bad', namespace: NAMESPACE },
          spec: { slug: 'Not_A_Slug' },
        } as KubernetesObject,
      ],
      { dryRun: true },
    );
    expect(bad?.error).toMatch(/spec\.slug/);
  });

  it("the Dockerfile runs the package's bin as user 10001", async () => {
    const dockerfile = await readFile(repo('deploy/Dockerfile'), 'utf8');
    const pkg = JSON.parse(await readFile(repo('package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(dockerfile).toContain(`ENTRYPOINT ["node","${pkg.bin.hostplane}"]`);
    expect(dockerfile).toContain('CMD ["serve"]');
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
  });
});
