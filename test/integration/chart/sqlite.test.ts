import { AuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';
import {
  CHART_DIR,
  REQUIRED_VALUES,
  applyObjects,
  chartCrds,
  componentObjects,
  describeObject,
  ensureNamespace,
  findObject,
  helm,
  installCrds,
  monitoringTestCrds,
  renderChart,
  runHelm,
  valuesFile,
  type Values,
} from '../../support/kube/helm.js';
import {
  litestreamMetricNames,
  pinnedLitestreamVersion,
  type Container,
  type Pdb,
  type Policy,
  type Service,
  type ShardSet,
} from './sqlite-support.js';

// The sqlite shards of the chart against the real tools: helm renders them, a real kube-apiserver
// validates (server-side dry run), stores and authorizes them, and the real Litestream binary says
// which metric names the alerts may use.

const NAMESPACE = 'hostplane-sqlite';
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

/** Renders with `values` and dry-runs every object against the API server. */
async function render(values: Values): Promise<KubernetesObject[]> {
  const objects = await renderChart({ namespace: NAMESPACE, values, releaseName: RELEASE });
  const results = await applyObjects(env, objects, { dryRun: true });
  expect(results.filter((r) => r.error).map((r) => `${describeObject(r.object)}: ${r.error}`)).toEqual([]);
  return objects;
}

const one = <T extends KubernetesObject>(objects: KubernetesObject[], kind: string): T => {
  const found = componentObjects<T>(objects, kind, 'sqlite');
  if (found.length !== 1) throw new Error(`expected one sqlite ${kind}, found ${found.length}`);
  return found[0] as T;
};
const shardContainer = (set: ShardSet): Container => {
  const c = set.spec.template.spec.containers.find((x) => x.name === 'sqlite');
  if (!c) throw new Error('no sqlite container');
  return c;
};
const env_ = (c: Container | undefined, name: string) => c?.env?.find((e) => e.name === name);
const value = (c: Container | undefined, name: string) => env_(c, name)?.value;
const mountOf = (c: Container | undefined, volume: string) =>
  c?.volumeMounts?.find((m) => m.name === volume)?.mountPath;

describe('the sqlite StatefulSet', () => {
  it('defaults: two shards on 10Gi PVCs, `serve --role sqlite`, Litestream copied in by an init container', async () => {
    const objects = await render({});
    const set = one<ShardSet>(objects, 'StatefulSet');
    const headless = one<Service>(objects, 'Service');
    const pod = set.spec.template;
    expect(set.spec).toMatchObject({
      replicas: 2,
      serviceName: headless.metadata?.name,
      podManagementPolicy: 'Parallel',
      updateStrategy: { type: 'RollingUpdate' },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
    });
    expect(pod.metadata.labels).toMatchObject(set.spec.selector.matchLabels);
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(60);
    const c = shardContainer(set);
    expect(c.args).toEqual(['serve', '--role', 'sqlite']);

    // The PVC: 10Gi, the cluster's default class (no storageClassName), mounted as the data dir.
    const [claim] = set.spec.volumeClaimTemplates;
    expect(claim?.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '10Gi' } },
    });
    expect(mountOf(c, claim?.metadata.name ?? '?')).toBe(value(c, 'HOSTPLANE_DATA_DIR'));
    expect(value(c, 'HOSTPLANE_DATA_DIR')).toBe('/var/lib/hostplane');
    // volumeClaimTemplates are immutable: their labels must not change with the chart version.
    expect(claim?.metadata.labels).toEqual(set.spec.selector.matchLabels);
    expect(mountOf(c, 'tmp')).toBe('/tmp');

    // Litestream: the init container copies the binary and the CA bundle into the shared emptyDir.
    const [init] = pod.spec.initContainers ?? [];
    expect(init?.image).toBe('litestream/litestream:0.5.18');
    const binDir = mountOf(init, 'litestream-bin');
    expect(init?.command).toEqual([
      'cp',
      '/usr/local/bin/litestream',
      '/etc/ssl/certs/ca-certificates.crt',
      `${binDir}/`,
    ]);
    expect(pod.spec.volumes.find((v) => v.name === 'litestream-bin')?.emptyDir).toBeDefined();
    expect(c.volumeMounts).toContainEqual({ name: 'litestream-bin', mountPath: binDir, readOnly: true });
    expect(value(c, 'HOSTPLANE_LITESTREAM_BIN')).toBe(`${binDir}/litestream`);
    expect(value(c, 'SSL_CERT_FILE')).toBe(`${binDir}/ca-certificates.crt`);

    // The shared contract's settings, as the chart sets them on the sqlite role.
    expect(value(c, 'HOSTPLANE_SQLITE_REPLICATION')).toBe('required');
    expect(value(c, 'HOSTPLANE_SQLITE_RETENTION_HOURS')).toBe('168');
    expect(value(c, 'HOSTPLANE_SQLITE_REPLICA_PREFIX')).toBe('sqlite');
    expect(value(c, 'HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD')).toBe('1000');
    expect(value(c, 'HOSTPLANE_LITESTREAM_METRICS_PORT')).toBe('9091');
    expect(c.ports).toEqual([
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
      { name: 'litestream', containerPort: 9091, protocol: 'TCP' },
    ]);
    // Same PostgreSQL and S3 as the api; no cluster mode (the shards never call the Kubernetes API).
    expect(env_(c, 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
      name: 'hostplane-database',
      key: 'DATABASE_URL',
    });
    expect(env_(c, 'AWS_SECRET_ACCESS_KEY')?.valueFrom?.secretKeyRef?.name).toBe('hostplane-s3');
    expect(value(c, 'S3_BUCKET')).toBe('hostplane');
    expect(env_(c, 'HOSTPLANE_KUBERNETES')).toBeUndefined();
    // Every variable once (server-side apply keys env by name).
    const names = (c.env ?? []).map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);

    // Probes: a generous start (restores), ready = restored and leased, live = the process answers.
    expect(c.startupProbe).toEqual({
      httpGet: { path: '/healthz', port: 'http' },
      periodSeconds: 5,
      failureThreshold: 60,
    });
    expect(c.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(c.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
  });

  it("each shard's identity is its pod name and stable DNS name through the headless Service", async () => {
    const objects = await render({});
    const set = one<ShardSet>(objects, 'StatefulSet');
    const headless = one<Service>(objects, 'Service');
    const c = shardContainer(set);
    expect(env_(c, 'HOSTPLANE_SQLITE_SHARD_NAME')?.valueFrom).toEqual({
      fieldRef: { fieldPath: 'metadata.name' },
    });
    // $(VAR) expands a variable defined earlier in the list: the name must come before the URL.
    const names = (c.env ?? []).map((e) => e.name);
    expect(names.indexOf('HOSTPLANE_SQLITE_SHARD_NAME')).toBeLessThan(
      names.indexOf('HOSTPLANE_SQLITE_SHARD_URL'),
    );
    const http = headless.spec.ports.find((p) => p.name === 'http');
    expect(value(c, 'HOSTPLANE_SQLITE_SHARD_URL')).toBe(
      `http://$(HOSTPLANE_SQLITE_SHARD_NAME).${headless.metadata?.name}.${NAMESPACE}.svc.cluster.local:${http?.port}`,
    );
    expect(http?.port).toBe(8080); // pod DNS names skip the Service: its port must be the container's

    // Headless, and publishing not-ready shards (a restoring shard answers 503 + Retry-After).
    expect(headless.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    expect(set.spec.template.metadata.labels).toMatchObject(headless.spec.selector);
    expect(headless.spec.ports.map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ['http', 8080, 'http'],
      ['metrics', 9090, 'metrics'],
      ['litestream', 9091, 'litestream'],
    ]);

    // One shard at a time may be disrupted.
    const pdb = one<Pdb>(objects, 'PodDisruptionBudget');
    expect(pdb.spec.maxUnavailable).toBe(1);
    expect(set.spec.template.metadata.labels).toMatchObject(pdb.spec.selector.matchLabels);
  });

  it('values: replicas, storage, cluster domain, replication, the Litestream image and port', async () => {
    const objects = await render({
      clusterDomain: 'corp.internal',
      s3: { existingSecret: 's3-keys', bucket: 'prod-sites' },
      sqlite: {
        replicas: 4,
        maxDatabasesPerShard: 200,
        persistence: { storageClassName: 'fast-ssd', size: '50Gi' },
        replication: { mode: 'auto', retentionHours: 720, prefix: 'dbs/prod' },
        litestream: {
          image: { repository: 'registry.example/litestream', tag: '0.5.18-custom', pullPolicy: 'Always' },
          binaryPath: '/bin/litestream-static',
          caBundlePath: '',
          metricsPort: 9191,
        },
        pdb: { enabled: false },
        nodeSelector: { pool: 'storage' },
        terminationGracePeriodSeconds: 120,
        startupProbe: { periodSeconds: 10, failureThreshold: 180 },
        extraEnv: [{ name: 'HOSTPLANE_EXTRA', value: 'x' }],
      },
    });
    const set = one<ShardSet>(objects, 'StatefulSet');
    const c = shardContainer(set);
    const [init] = set.spec.template.spec.initContainers ?? [];
    expect(set.spec.replicas).toBe(4);
    expect(set.spec.volumeClaimTemplates[0]?.spec).toMatchObject({
      storageClassName: 'fast-ssd',
      resources: { requests: { storage: '50Gi' } },
    });
    expect(value(c, 'HOSTPLANE_SQLITE_SHARD_URL')).toMatch(/\.svc\.corp\.internal:8080$/);
    expect(value(c, 'HOSTPLANE_SQLITE_REPLICATION')).toBe('auto');
    expect(value(c, 'HOSTPLANE_SQLITE_RETENTION_HOURS')).toBe('720');
    expect(value(c, 'HOSTPLANE_SQLITE_REPLICA_PREFIX')).toBe('dbs/prod');
    expect(value(c, 'HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD')).toBe('200');
    expect(value(c, 'S3_BUCKET')).toBe('prod-sites');
    expect(env_(c, 'AWS_ACCESS_KEY_ID')?.valueFrom?.secretKeyRef?.name).toBe('s3-keys');
    expect(init).toMatchObject({
      image: 'registry.example/litestream:0.5.18-custom',
      imagePullPolicy: 'Always',
      command: ['cp', '/bin/litestream-static', '/opt/litestream/'],
    });
    expect(value(c, 'HOSTPLANE_LITESTREAM_BIN')).toBe('/opt/litestream/litestream-static');
    expect(env_(c, 'SSL_CERT_FILE')).toBeUndefined();
    expect(value(c, 'HOSTPLANE_LITESTREAM_METRICS_PORT')).toBe('9191');
    expect(c.ports?.find((p) => p.name === 'litestream')?.containerPort).toBe(9191);
    expect(one<Service>(objects, 'Service').spec.ports.find((p) => p.name === 'litestream')?.port).toBe(9191);
    expect(componentObjects(objects, 'PodDisruptionBudget', 'sqlite')).toEqual([]);
    expect(set.spec.template.spec.nodeSelector).toEqual({ pool: 'storage' });
    expect(set.spec.template.spec.terminationGracePeriodSeconds).toBe(120);
    expect(c.startupProbe).toMatchObject({ periodSeconds: 10, failureThreshold: 180 });
    expect(value(c, 'HOSTPLANE_EXTRA')).toBe('x');

    // "-": an explicit empty class (no dynamic provisioning), unlike "" (the field left out).
    const none = one<ShardSet>(
      await render({ sqlite: { persistence: { storageClassName: '-' } } }),
      'StatefulSet',
    );
    expect(none.spec.volumeClaimTemplates[0]?.spec.storageClassName).toBe('');
  });

  it.each([
    ['an unknown replication mode', { replication: { mode: 'sometimes' } }, 'mode'],
    ['a PVC size that is no quantity', { persistence: { size: 'big' } }, 'size'],
    ['the shard metrics port for Litestream', { litestream: { metricsPort: 9090 } }, 'metricsPort'],
    ['no Litestream image tag', { litestream: { image: { tag: '' } } }, 'tag'],
    ['a relative binary path', { litestream: { binaryPath: 'litestream' } }, 'binaryPath'],
    ['an unknown key', { sidecar: true }, 'sidecar'],
  ])('values.schema.json refuses %s', async (_what, sqlite, mentioned) => {
    const { file, remove } = await valuesFile({ ...REQUIRED_VALUES, sqlite });
    try {
      const result = await runHelm(['lint', '--strict', CHART_DIR, '--values', file]);
      expect(result.code).not.toBe(0);
      expect(result.stdout + result.stderr).toMatch(/schema/i);
      expect(result.stdout + result.stderr).toContain(mentioned);
    } finally {
      await remove();
    }
  });

  it('every key of values.yaml is in values.schema.json', async () => {
    const values = parse(await readFile(path.join(CHART_DIR, 'values.yaml'), 'utf8')) as Values;
    const schema = JSON.parse(await readFile(path.join(CHART_DIR, 'values.schema.json'), 'utf8')) as Schema;
    interface Schema {
      properties?: Record<string, Schema>;
      additionalProperties?: boolean | Schema;
    }
    const missing: string[] = [];
    const walk = (v: unknown, s: Schema | undefined, at: string) => {
      if (typeof v !== 'object' || v === null || Array.isArray(v) || !s?.properties) return;
      // Free-form maps (labels, resources, nodeSelector, ...) have no properties to walk.
      for (const [k, child] of Object.entries(v)) {
        const sub = s.properties[k];
        if (!sub && s.additionalProperties === false) missing.push(`${at}${k}`);
        walk(child, sub, `${at}${k}.`);
      }
    };
    walk(values, schema, '');
    expect(missing).toEqual([]);
  });

  it('upgrades keep the immutable parts: a new chart version applies, a new PVC size is refused', async () => {
    const namespace = 'hostplane-sqlite-upgrade';
    const kube = ['--kubeconfig', env.kubeconfigPath, '--namespace', namespace];
    const required = await valuesFile({ ...REQUIRED_VALUES, crds: { enabled: false } });
    const copy = await mkdtemp(path.join(tmpdir(), 'hostplane-chart-'));
    try {
      // --no-hooks: no kubelet here to run the migrate Job.
      const flags = ['--no-hooks', '--values', required.file, ...kube];
      await helm(['install', RELEASE, CHART_DIR, '--create-namespace', ...flags]);
      // The next chart version changes every object's helm.sh/chart label, but not the claim template.
      await cp(CHART_DIR, copy, { recursive: true });
      const chartFile = path.join(copy, 'Chart.yaml');
      const chart = parse(await readFile(chartFile, 'utf8')) as { version: string; appVersion: string };
      await writeFile(chartFile, stringify({ ...chart, version: '99.0.0', appVersion: '99.0.0' }));
      await helm(['upgrade', RELEASE, copy, ...flags]);
      const refused = await runHelm([
        'upgrade',
        RELEASE,
        copy,
        ...flags,
        '--set',
        'sqlite.persistence.size=20Gi',
      ]);
      expect(refused.code).not.toBe(0);
      expect(refused.stdout + refused.stderr).toMatch(/StatefulSet.*Forbidden.*spec/s);
    } finally {
      await required.remove();
      await rm(copy, { recursive: true, force: true });
    }
  });
});

describe('network, monitoring and permissions of the shards', () => {
  it('NetworkPolicy: api, controller and shards reach the shard port; metrics and Litestream from metricsFrom', async () => {
    const metricsFrom = [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ];
    const objects = await render({
      networkPolicy: { enabled: true, metricsFrom, egress: { restrict: true } },
    });
    const set = one<ShardSet>(objects, 'StatefulSet');
    const policy = one<Policy>(objects, 'NetworkPolicy');
    expect(set.spec.template.metadata.labels).toMatchObject(policy.spec.podSelector.matchLabels);
    expect(policy.spec.ingress).toEqual([
      {
        ports: [{ port: 'http', protocol: 'TCP' }],
        from: [
          {
            podSelector: {
              matchLabels: { 'app.kubernetes.io/name': 'hostplane', 'app.kubernetes.io/instance': RELEASE },
              matchExpressions: [
                {
                  key: 'app.kubernetes.io/component',
                  operator: 'In',
                  values: ['api', 'controller', 'sqlite'],
                },
              ],
            },
          },
        ],
      },
      {
        ports: [
          { port: 'metrics', protocol: 'TCP' },
          { port: 'litestream', protocol: 'TCP' },
        ],
        from: metricsFrom,
      },
    ]);
    // With egress restricted, the roles that reach shards may; the edge may not.
    const toShards = {
      to: [{ podSelector: { matchLabels: set.spec.selector.matchLabels } }],
      ports: [{ port: 'http', protocol: 'TCP' }],
    };
    for (const component of ['api', 'controller', 'sqlite', 'edge']) {
      const [p] = componentObjects<Policy>(objects, 'NetworkPolicy', component);
      if (component === 'edge') expect(p?.spec.egress).not.toContainEqual(toShards);
      else expect(p?.spec.egress, component).toContainEqual(toShards);
    }
  });

  it("ServiceMonitor and PrometheusRule: both metrics ports scraped, alerts on the shard's and Litestream's metrics", async () => {
    const objects = await render({
      monitoring: {
        serviceMonitor: { enabled: true },
        prometheusRule: {
          enabled: true,
          sqliteReplicationLag: { seconds: 120, for: '5m', severity: 'page' },
        },
      },
    });
    type Monitor = KubernetesObject & {
      spec: {
        selector: { matchExpressions: { values: string[] }[] };
        endpoints: { port: string; path: string }[];
      };
    };
    const monitor = findObject<Monitor>(objects, 'ServiceMonitor');
    expect(monitor.spec.selector.matchExpressions[0]?.values).toContain('sqlite');
    const headless = one<Service>(objects, 'Service');
    for (const { port } of monitor.spec.endpoints) {
      expect(headless.spec.ports.map((p) => p.name)).toContain(port);
    }
    expect(monitor.spec.endpoints.map((e) => [e.port, e.path])).toEqual([
      ['metrics', '/metrics'],
      ['litestream', '/metrics'],
    ]);

    type Rule = KubernetesObject & {
      spec: {
        groups: { rules: { alert: string; expr: string; for?: string; labels: Record<string, string> }[] }[];
      };
    };
    const alerts = new Map(
      findObject<Rule>(objects, 'PrometheusRule').spec.groups.flatMap((g) =>
        g.rules.map((r) => [r.alert, r]),
      ),
    );
    const lag = alerts.get('HostplaneSqliteReplicationLag');
    expect(lag?.expr).toMatch(
      /max by \(namespace, shard\) \(hostplane_sqlite_replication_lag_seconds\{namespace="hostplane-sqlite", service=~"hostplane-\.\*"\}\) > 120/,
    );
    expect(lag).toMatchObject({ for: '5m', labels: { severity: 'page' } });
    expect(alerts.get('HostplaneSqliteRestoreFailed')?.expr).toContain(
      'increase(hostplane_sqlite_restore_failures_total{namespace="hostplane-sqlite"',
    );
    expect(alerts.get('HostplaneSqliteRestoreFailed')?.expr).toContain('[15m])) > 0');
    expect(alerts.get('HostplaneLitestreamSyncErrors')?.expr).toContain('rate(litestream_sync_error_count{');
    // The alert's selector matches the headless Service the shards are scraped through.
    expect(headless.metadata?.name).toMatch(/^hostplane-/);
  });

  it('every Litestream metric the alerts and runbooks name exists in the pinned Litestream; the image is that version', async () => {
    const exported = await litestreamMetricNames();
    const objects = await renderChart({
      namespace: NAMESPACE,
      values: { monitoring: { prometheusRule: { enabled: true } } },
    });
    const exprs = JSON.stringify(findObject(objects, 'PrometheusRule'));
    const readme = await readFile(path.join(CHART_DIR, 'README.md'), 'utf8');
    const named = (text: string) => [...new Set(text.match(/\blitestream_[a-z_]+/g) ?? [])];
    expect(named(exprs)).toEqual(['litestream_sync_error_count']);
    for (const metric of named(exprs)) expect(exported, metric).toContain(metric);
    // Exported from the first S3 error on (a counter with labels has no series before it).
    const afterAnError = ['litestream_replica_operation_errors_total'];
    for (const metric of named(readme)) expect([...exported, ...afterAnError], metric).toContain(metric);

    const version = await pinnedLitestreamVersion();
    const values = parse(await readFile(path.join(CHART_DIR, 'values.yaml'), 'utf8')) as {
      sqlite: { litestream: { image: { tag: string } } };
    };
    expect(`v${values.sqlite.litestream.image.tag}`).toBe(version);
  });

  it("the shards' ServiceAccount has no token and no permission at all", async () => {
    const namespace = 'hostplane-sqlite-rbac';
    await ensureNamespace(env, namespace);
    const objects = await renderChart({ namespace, releaseName: RELEASE });
    const rbac = objects.filter((o) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(o.kind ?? ''));
    const results = await applyObjects(env, rbac, { dryRun: false });
    expect(results.filter((r) => r.error).map((r) => r.error)).toEqual([]);

    const set = one<ShardSet>(objects, 'StatefulSet');
    const account = set.spec.template.spec.serviceAccountName;
    const sa = findObject(objects, 'ServiceAccount', account) as { automountServiceAccountToken?: boolean };
    expect(sa.automountServiceAccountToken).toBe(false);
    const authz = env.kubeConfig().makeApiClient(AuthorizationV1Api);
    const user = `system:serviceaccount:${namespace}:${account}`;
    for (const check of [
      { verb: 'get', group: 'hostplane.dev', resource: 'sqlitedatabases' },
      { verb: 'update', group: 'hostplane.dev', resource: 'sqlitedatabases', subresource: 'status' },
      { verb: 'get', group: '', resource: 'secrets' },
      { verb: 'list', group: '', resource: 'pods' },
      { verb: 'get', group: 'coordination.k8s.io', resource: 'leases' },
      { verb: 'create', group: '', resource: 'events' },
    ]) {
      const review = await authz.createSubjectAccessReview({
        body: {
          spec: {
            user,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
            resourceAttributes: { ...check, namespace },
          },
        },
      });
      expect(review.status?.allowed, `${user} ${check.verb} ${check.resource}`).toBe(false);
    }
  });
});
