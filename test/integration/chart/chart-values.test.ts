import type { KubernetesObject } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXTRA_FILE_TYPES } from '../../../src/files/index.js';
import {
  CHART_DIR,
  KUBE_VERSION,
  componentObjects,
  containerEnv,
  findObject,
  REQUIRED_VALUES,
  renderChart,
  runHelm,
  valuesFile,
} from '../../support/kube/helm.js';
import {
  deployment,
  envVar,
  NAMESPACE,
  podSpecOf,
  renderAndValidate,
  useChartTestEnv,
  type Service,
} from './chart-support.js';

// The chart's values against the real tools: `helm lint` (with --strict, and values.schema.json
// refusing bad values), and `helm template` with each group of values, every rendered object
// validated by a real kube-apiserver (server-side apply, dry run) and checked for the invariants of
// chart-support.ts. RBAC: chart-rbac.test.ts; deploy/: chart-deploy.test.ts.

useChartTestEnv();

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
