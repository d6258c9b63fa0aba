import { AuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { applyObjects, ensureNamespace } from '../../support/kube/apply.js';
import { CHART_DIR, componentObjects, findObject, renderChart } from '../../support/kube/helm.js';
import {
  litestreamMetricNames,
  pinnedLitestreamVersion,
  chartTestEnv,
  sqliteObject,
  type Policy,
  type Service,
  type ShardSet,
} from './sqlite-support.js';

// The sqlite shards' NetworkPolicy, ServiceMonitor, alerts and ServiceAccount against the real
// tools: a real kube-apiserver validates and authorizes, and the real Litestream binary says which
// metric names the alerts may use.

const NAMESPACE = 'hostplane-sqlite-ops';
const RELEASE = 'hostplane';

const { env, render } = chartTestEnv(NAMESPACE);

describe('network, monitoring and permissions of the shards', () => {
  it('NetworkPolicy: api, controller and shards reach the shard port; metrics and Litestream from metricsFrom', async () => {
    const metricsFrom = [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ];
    const objects = await render({
      networkPolicy: { enabled: true, metricsFrom, egress: { restrict: true } },
    });
    const set = sqliteObject<ShardSet>(objects, 'StatefulSet');
    const policy = sqliteObject<Policy>(objects, 'NetworkPolicy');
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
    const headless = sqliteObject<Service>(objects, 'Service');
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
    expect(lag?.expr).toContain(
      `max by (namespace, pod) (hostplane_sqlite_replication_lag_seconds{namespace="${NAMESPACE}", service=~"hostplane-.*"}) > 120`,
    );
    expect(lag).toMatchObject({ for: '5m', labels: { severity: 'page' } });
    expect(alerts.get('HostplaneSqliteRestoreFailed')?.expr).toContain(
      `increase(hostplane_sqlite_restore_failures_total{namespace="${NAMESPACE}"`,
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
    // The chart README and the runbooks (docs/sre/runbooks/) name Litestream's metrics to check.
    const runbooks = path.resolve(CHART_DIR, '../../docs/sre/runbooks');
    const pages = (await readdir(runbooks)).map((file) => path.join(runbooks, file));
    const readme = (
      await Promise.all([path.join(CHART_DIR, 'README.md'), ...pages].map((file) => readFile(file, 'utf8')))
    ).join('\n');
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
    await ensureNamespace(env(), namespace);
    const objects = await renderChart({ namespace, releaseName: RELEASE });
    const rbac = objects.filter((o) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(o.kind ?? ''));
    const results = await applyObjects(env(), rbac, { dryRun: false });
    expect(results.filter((r) => r.error).map((r) => r.error)).toEqual([]);

    const set = sqliteObject<ShardSet>(objects, 'StatefulSet');
    const account = set.spec.template.spec.serviceAccountName;
    const sa = findObject(objects, 'ServiceAccount', account) as { automountServiceAccountToken?: boolean };
    expect(sa.automountServiceAccountToken).toBe(false);
    const authz = env().kubeConfig().makeApiClient(AuthorizationV1Api);
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
