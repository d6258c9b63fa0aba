import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { registry } from '../../../src/observability/metrics.js';
import { startKubeTestEnv, type KubeTestEnv } from '../../support/kube/envtest.js';

// What the runtime-*.test.ts files share: each file's own real etcd + kube-apiserver, an admin
// CoreV1Api on it, a silent logger, the runtime's metrics, and Namespace/ConfigMap shorthands.

export const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');

// Live bindings: set by useKubeTestEnv()'s beforeAll, read by the tests that import them.
export let env: KubeTestEnv;
export let core: CoreV1Api;

/** Starts this test file's API server before its tests and stops it after them. */
export function useKubeTestEnv(): void {
  beforeAll(async () => {
    env = await startKubeTestEnv();
    core = env.kubeConfig().makeApiClient(CoreV1Api);
  });

  afterAll(async () => {
    await env?.stop();
  });
}

/** The current value of a counter or gauge for exactly these labels (0 when never set). */
export async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`metric ${name} is not registered`);
  const { values } = await metric.get();
  const sample = values.find((value) =>
    Object.entries(labels).every(([key, expected]) => String(value.labels[key]) === expected),
  );
  return sample?.value ?? 0;
}

export async function createNamespace(name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } });
}

export async function createConfigMap(namespace: string, name: string, data: Record<string, string> = {}) {
  return core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data } });
}
