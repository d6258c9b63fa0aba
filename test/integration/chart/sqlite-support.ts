import type { KubernetesObject } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { requireTool, startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';
import { applyObjects, ensureNamespace, installCrds, monitoringTestCrds } from '../../support/kube/apply.js';
import {
  DEFAULT_RELEASE,
  chartCrds,
  componentObjects,
  describeObject,
  renderChart,
  type Values,
} from '../../support/kube/helm.js';
import { captureOutput, freePort, terminate, waitUntilReady } from '../../support/procs.js';

// Shapes of the sqlite objects the chart renders (only the fields sqlite.test.ts reads), and the
// real Litestream binary's metric names.

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  periodSeconds?: number;
  failureThreshold?: number;
}
export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: string;
  args?: string[];
  command?: string[];
  env?: EnvVar[];
  ports?: { name: string; containerPort: number; protocol: string }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
}
export type ShardSet = KubernetesObject & {
  spec: {
    replicas: number;
    serviceName: string;
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        serviceAccountName: string;
        automountServiceAccountToken?: boolean;
        terminationGracePeriodSeconds?: number;
        nodeSelector?: Record<string, string>;
        initContainers?: Container[];
        containers: Container[];
        volumes: { name: string; emptyDir?: object }[];
      };
    };
    volumeClaimTemplates: {
      metadata: { name: string; labels?: Record<string, string> };
      spec: {
        storageClassName?: string;
        accessModes: string[];
        resources: { requests: { storage: string } };
      };
    }[];
  };
};
export type Service = KubernetesObject & {
  spec: {
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: string }[];
  };
};
export type Pdb = KubernetesObject & {
  spec: { maxUnavailable: number | string; selector: { matchLabels: Record<string, string> } };
};
export type Policy = KubernetesObject & {
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    ingress: unknown[];
    egress?: unknown[];
  };
};

/** Renders the chart with `values` and dry-runs every object against the API server; throws on a rejected one. */
/**
 * One test file's real kube-apiserver with the chart's CRDs and `namespace`, started before its
 * tests and stopped after them; `render` renders the chart and has the API server validate it.
 */
export function chartTestEnv(namespace: string): {
  env: () => KubeTestEnv;
  render: (values: Values) => Promise<KubernetesObject[]>;
} {
  let env: KubeTestEnv | undefined;
  beforeAll(async () => {
    env = await startKubeTestEnv();
    await installCrds(env, [...(await chartCrds()), ...monitoringTestCrds()]);
    await ensureNamespace(env, namespace);
  });
  afterAll(async () => {
    await env?.stop();
  });
  const started = () => {
    if (!env) throw new Error('the kube test env has not started');
    return env;
  };
  return { env: started, render: (values) => renderValidated(started(), namespace, values) };
}

export async function renderValidated(
  env: KubeTestEnv,
  namespace: string,
  values: Values,
): Promise<KubernetesObject[]> {
  const objects = await renderChart({ namespace, values, releaseName: DEFAULT_RELEASE });
  const rejected = (await applyObjects(env, objects, { dryRun: true })).filter((r) => r.error);
  if (rejected.length > 0) {
    throw new Error(rejected.map((r) => `${describeObject(r.object)}: ${r.error}`).join('\n'));
  }
  return objects;
}

/** The one sqlite object of `kind`. */
export const sqliteObject = <T extends KubernetesObject>(objects: KubernetesObject[], kind: string): T => {
  const found = componentObjects<T>(objects, kind, 'sqlite');
  if (found.length !== 1) throw new Error(`expected one sqlite ${kind}, found ${found.length}`);
  return found[0] as T;
};
export const shardContainer = (set: ShardSet): Container => {
  const c = set.spec.template.spec.containers.find((x) => x.name === 'sqlite');
  if (!c) throw new Error('no sqlite container');
  return c;
};
export const envVarOf = (c: Container | undefined, name: string) => c?.env?.find((e) => e.name === name);
export const envValue = (c: Container | undefined, name: string) => envVarOf(c, name)?.value;
export const mountOf = (c: Container | undefined, volume: string) =>
  c?.volumeMounts?.find((m) => m.name === volume)?.mountPath;

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const LITESTREAM_BIN = path.join(repo, '.cache', 'tools', 'litestream');

/** The Litestream version pinned in the tools module (test/tools/litestream/go.mod), e.g. v0.5.18. */
export async function pinnedLitestreamVersion(): Promise<string> {
  const mod = await readFile(path.join(repo, 'test', 'tools', 'litestream', 'go.mod'), 'utf8');
  const match = /github\.com\/benbjohnson\/litestream (v\S+)/.exec(mod);
  if (!match?.[1]) throw new Error('no litestream pin in test/tools/litestream/go.mod');
  return match[1];
}

/**
 * Runs the real Litestream replicating one (empty) database to a file replica with its metrics
 * on, and returns the names of the `litestream_*` series it exports. Its per-database series only
 * exist once a database is registered, hence the database.
 */
export async function litestreamMetricNames(): Promise<string[]> {
  requireTool(LITESTREAM_BIN);
  const dir = await mkdtemp(path.join(tmpdir(), 'hostplane-litestream-'));
  try {
    const port = await freePort();
    const db = path.join(dir, 'db.sqlite');
    await writeFile(db, ''); // an empty file is an empty SQLite database
    const config = path.join(dir, 'litestream.yml');
    await writeFile(
      config,
      JSON.stringify({
        addr: `127.0.0.1:${port}`,
        dbs: [{ path: db, replicas: [{ type: 'file', path: path.join(dir, 'replica') }] }],
      }),
    );
    const child = spawn(LITESTREAM_BIN, ['replicate', '-config', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = captureOutput(child);
    try {
      let text = '';
      await waitUntilReady('litestream', child, output, async () => {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`);
        text = await res.text();
        return res.ok && text.includes('litestream_sync_count{');
      });
      const names = text
        .split('\n')
        .filter((line) => line.startsWith('litestream_'))
        .map((line) => line.replace(/[{ ].*$/, ''));
      return [...new Set(names)].sort();
    } finally {
      await terminate(child, 'SIGTERM');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
