import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  CHART_DIR,
  REQUIRED_VALUES,
  componentObjects,
  helm,
  runHelm,
  valuesFile,
  type Values,
} from '../../support/kube/helm.js';
import {
  envValue,
  envVarOf,
  mountOf,
  chartTestEnv,
  shardContainer,
  sqliteObject,
  type Pdb,
  type Service,
  type ShardSet,
} from './sqlite-support.js';

// The sqlite shards of the chart against the real tools: helm renders them, a real kube-apiserver
// validates them (server-side dry run) and stores them through an install and upgrades.
// Network, monitoring and permissions: sqlite-monitoring.test.ts.

const NAMESPACE = 'hostplane-sqlite';
const RELEASE = 'hostplane';

const { env, render } = chartTestEnv(NAMESPACE);

describe('the sqlite StatefulSet', () => {
  it('defaults: two shards on 10Gi PVCs, `serve --role sqlite`, Litestream copied in by an init container', async () => {
    const objects = await render({});
    const set = sqliteObject<ShardSet>(objects, 'StatefulSet');
    const headless = sqliteObject<Service>(objects, 'Service');
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
    expect(mountOf(c, claim?.metadata.name ?? '?')).toBe(envValue(c, 'HOSTPLANE_DATA_DIR'));
    expect(envValue(c, 'HOSTPLANE_DATA_DIR')).toBe('/var/lib/hostplane');
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
    expect(envValue(c, 'HOSTPLANE_LITESTREAM_BIN')).toBe(`${binDir}/litestream`);
    expect(envValue(c, 'SSL_CERT_FILE')).toBe(`${binDir}/ca-certificates.crt`);

    // The shared contract's settings, as the chart sets them on the sqlite role.
    expect(envValue(c, 'HOSTPLANE_SQLITE_REPLICATION')).toBe('required');
    expect(envValue(c, 'HOSTPLANE_SQLITE_RETENTION_HOURS')).toBe('168');
    expect(envValue(c, 'HOSTPLANE_SQLITE_REPLICA_PREFIX')).toBe('sqlite');
    expect(envValue(c, 'HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD')).toBe('500');
    expect(envValue(c, 'HOSTPLANE_SQLITE_FAILOVER_AFTER_MS')).toBe('20000');
    expect(envValue(c, 'HOSTPLANE_LITESTREAM_METRICS_PORT')).toBe('9091');
    expect(c.ports).toEqual([
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
      { name: 'litestream', containerPort: 9091, protocol: 'TCP' },
    ]);
    // Same PostgreSQL and S3 as the api; no cluster mode (the shards never call the Kubernetes API).
    expect(envVarOf(c, 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
      name: 'hostplane-database',
      key: 'DATABASE_URL',
    });
    expect(envVarOf(c, 'AWS_SECRET_ACCESS_KEY')?.valueFrom?.secretKeyRef?.name).toBe('hostplane-s3');
    expect(envValue(c, 'S3_BUCKET')).toBe('hostplane');
    expect(envVarOf(c, 'HOSTPLANE_KUBERNETES')).toBeUndefined();
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
    const set = sqliteObject<ShardSet>(objects, 'StatefulSet');
    const headless = sqliteObject<Service>(objects, 'Service');
    const c = shardContainer(set);
    expect(envVarOf(c, 'HOSTPLANE_SQLITE_SHARD_NAME')?.valueFrom).toEqual({
      fieldRef: { fieldPath: 'metadata.name' },
    });
    // $(VAR) expands a variable defined earlier in the list: the name must come before the URL.
    const names = (c.env ?? []).map((e) => e.name);
    expect(names.indexOf('HOSTPLANE_SQLITE_SHARD_NAME')).toBeLessThan(
      names.indexOf('HOSTPLANE_SQLITE_SHARD_URL'),
    );
    const http = headless.spec.ports.find((p) => p.name === 'http');
    expect(envValue(c, 'HOSTPLANE_SQLITE_SHARD_URL')).toBe(
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
    const pdb = sqliteObject<Pdb>(objects, 'PodDisruptionBudget');
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
        failoverAfterMs: 0,
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
    const set = sqliteObject<ShardSet>(objects, 'StatefulSet');
    const c = shardContainer(set);
    const [init] = set.spec.template.spec.initContainers ?? [];
    expect(set.spec.replicas).toBe(4);
    expect(set.spec.volumeClaimTemplates[0]?.spec).toMatchObject({
      storageClassName: 'fast-ssd',
      resources: { requests: { storage: '50Gi' } },
    });
    expect(envValue(c, 'HOSTPLANE_SQLITE_SHARD_URL')).toMatch(/\.svc\.corp\.internal:8080$/);
    expect(envValue(c, 'HOSTPLANE_SQLITE_REPLICATION')).toBe('auto');
    expect(envValue(c, 'HOSTPLANE_SQLITE_RETENTION_HOURS')).toBe('720');
    expect(envValue(c, 'HOSTPLANE_SQLITE_REPLICA_PREFIX')).toBe('dbs/prod');
    expect(envValue(c, 'HOSTPLANE_SQLITE_MAX_DATABASES_PER_SHARD')).toBe('200');
    expect(envValue(c, 'HOSTPLANE_SQLITE_FAILOVER_AFTER_MS')).toBe('0');
    expect(envValue(c, 'S3_BUCKET')).toBe('prod-sites');
    expect(envVarOf(c, 'AWS_ACCESS_KEY_ID')?.valueFrom?.secretKeyRef?.name).toBe('s3-keys');
    expect(init).toMatchObject({
      image: 'registry.example/litestream:0.5.18-custom',
      imagePullPolicy: 'Always',
      command: ['cp', '/bin/litestream-static', '/opt/litestream/'],
    });
    expect(envValue(c, 'HOSTPLANE_LITESTREAM_BIN')).toBe('/opt/litestream/litestream-static');
    expect(envVarOf(c, 'SSL_CERT_FILE')).toBeUndefined();
    expect(envValue(c, 'HOSTPLANE_LITESTREAM_METRICS_PORT')).toBe('9191');
    expect(c.ports?.find((p) => p.name === 'litestream')?.containerPort).toBe(9191);
    expect(
      sqliteObject<Service>(objects, 'Service').spec.ports.find((p) => p.name === 'litestream')?.port,
    ).toBe(9191);
    expect(componentObjects(objects, 'PodDisruptionBudget', 'sqlite')).toEqual([]);
    expect(set.spec.template.spec.nodeSelector).toEqual({ pool: 'storage' });
    expect(set.spec.template.spec.terminationGracePeriodSeconds).toBe(120);
    expect(c.startupProbe).toMatchObject({ periodSeconds: 10, failureThreshold: 180 });
    expect(envValue(c, 'HOSTPLANE_EXTRA')).toBe('x');

    // "-": an explicit empty class (no dynamic provisioning), unlike "" (the field left out).
    const none = sqliteObject<ShardSet>(
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
    const kube = ['--kubeconfig', env().kubeconfigPath, '--namespace', namespace];
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
