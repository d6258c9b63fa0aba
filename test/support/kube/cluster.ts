import { CoreV1Api, NetworkingV1Api } from '@kubernetes/client-node';
import type { Config, KubernetesConfig } from '../../../src/config/index.js';
import { apiStatus, SiteResources } from '../../../src/kube/client.js';
import type { SiteSpec } from '../../../src/kube/resources.js';
import { createLogger } from '../../../src/observability/logger.js';
import { startController, type RunningController } from '../../../src/server/index.js';
import { startHostplane, type TestHostplane } from '../hostplane.js';
import { startKubeTestEnv, type KubeTestEnv } from './envtest.js';
import { ensureNamespace, installCrds } from './apply.js';
import { chartCrds } from './helm.js';

export { eventually } from '../eventually.js';

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
    cacheSyncDeadlineMs?: number;
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
    await installCrds(env, await chartCrds());
    await ensureNamespace(env, namespace);
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
        requestTimeoutMs: 15_000,
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
            cacheSyncDeadlineMs: options.cacheSyncDeadlineMs,
            // The bucket the SQLite replicas would be in: the fixture's MinIO bucket.
            blobs: hp.services.blobs,
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

/** Read-modify-write of a Site's spec with its resourceVersion: retried on 409 like any careful client. */
export async function updateSiteSpec(
  fx: ClusterFixture,
  name: string,
  change: (spec: SiteSpec) => SiteSpec,
): Promise<void> {
  for (;;) {
    const site = await fx.sites.get(name);
    if (!site) throw new Error(`no Site ${name}`);
    try {
      await fx.sites.replace({ ...site, spec: change(site.spec) });
      return;
    } catch (err) {
      if (apiStatus(err) !== 409) throw err;
    }
  }
}
