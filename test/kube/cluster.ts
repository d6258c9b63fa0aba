import {
  ApiextensionsV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  NetworkingV1Api,
  loadYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Config, KubernetesConfig } from '../../src/config/config.js';
import { SiteResources } from '../../src/kube/client.js';
import { crdFiles } from '../../src/kube/crds.js';
import { createLogger } from '../../src/observability/logger.js';
import { startController, type RunningController } from '../../src/runtime.js';
import { startHostplane, type TestHostplane } from '../support/hostplane.js';
import { startKubeTestEnv, type KubeTestEnv } from './envtest.js';

export const crdDir = fileURLToPath(new URL('../../crds/', import.meta.url));

/** Polls `probe` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Creates every Hostplane CRD (from crds/) and waits until the API serves them. */
export async function installCrds(env: KubeTestEnv): Promise<void> {
  const objects = KubernetesObjectApi.makeApiClient(env.kubeConfig());
  const extensions = env.kubeConfig().makeApiClient(ApiextensionsV1Api);
  for (const { file } of crdFiles()) {
    // client-node serializes through its models (`enum` is `_enum` there): plain YAML must be
    // deserialized into a model first, or fields such as enum and default are silently dropped.
    const crd = loadYaml<V1CustomResourceDefinition>(await readFile(`${crdDir}/${file}`, 'utf8'));
    await extensions.createCustomResourceDefinition({ body: crd });
  }
  await eventually('the CRDs to be established', async () => {
    const list = await objects.list('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
    const established = list.items.filter((crd) =>
      (crd as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions?.some(
        (c) => c.type === 'Established' && c.status === 'True',
      ),
    );
    return established.length >= crdFiles().length;
  });
}

export async function createNamespace(env: KubeTestEnv, name: string): Promise<void> {
  await env
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } });
}

export interface ClusterFixture {
  env: KubeTestEnv;
  namespace: string;
  /** API + edge (role all) on PostgreSQL + MinIO: the database the controllers write into. */
  hostplane: TestHostplane;
  sites: SiteResources;
  networking: NetworkingV1Api;
  core: CoreV1Api;
  /** Config for a controller in this fixture (cluster mode on, the namespace, fast resync). */
  controllerConfig(
    identity: string,
    overrides?: Partial<KubernetesConfig>,
  ): Config & { kubernetes: KubernetesConfig };
  /** Starts a controller against the fixture's database, authenticated with `token` (admin by default). */
  startController(options?: {
    identity?: string;
    token?: string;
    leaderElection?: boolean;
    kubernetes?: Partial<KubernetesConfig>;
  }): Promise<RunningController>;
  stop(): Promise<void>;
}

export const EDGE_SERVICE = { name: 'hostplane-edge', port: 80 };

/** A real API server with the CRDs and a namespace, plus Hostplane on PostgreSQL + MinIO. */
export async function startClusterFixture(namespace = 'hostplane'): Promise<ClusterFixture> {
  const env = await startKubeTestEnv();
  let hostplane: TestHostplane | undefined;
  const controllers: RunningController[] = [];
  try {
    await installCrds(env);
    await createNamespace(env, namespace);
    hostplane = await startHostplane('postgres+s3');
    const hp = hostplane;
    const controllerConfig: ClusterFixture['controllerConfig'] = (identity, overrides = {}) => ({
      ...hp.config,
      port: 0,
      host: '127.0.0.1',
      kubernetes: {
        namespace,
        podName: identity,
        ingressClass: 'nginx',
        edgeService: EDGE_SERVICE,
        clusterOwnerEmail: 'platform@example.com',
        leaseName: 'hostplane-controller',
        resyncMs: 2_000,
        ...overrides,
      },
    });
    return {
      env,
      namespace,
      hostplane: hp,
      sites: new SiteResources(env.kubeConfig(), namespace, 'test'),
      networking: env.kubeConfig().makeApiClient(NetworkingV1Api),
      core: env.kubeConfig().makeApiClient(CoreV1Api),
      controllerConfig,
      async startController(options = {}) {
        const controller = await startController(
          controllerConfig(options.identity ?? 'controller-0', options.kubernetes),
          {
            logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
            kubeConfig: env.kubeConfig(options.token),
            leaderElection: options.leaderElection ?? true,
          },
        );
        controllers.push(controller);
        return controller;
      },
      async stop() {
        await Promise.allSettled(controllers.map((c) => c.close()));
        await hp.stop();
        await env.stop();
      },
    };
  } catch (err) {
    await Promise.allSettled(controllers.map((c) => c.close()));
    await hostplane?.stop();
    await env.stop();
    throw err;
  }
}
