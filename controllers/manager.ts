import type { KubeConfig, V1Ingress } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config, KubernetesConfig } from '../src/config/config.js';
import { MANAGED_BY_LABEL, SITE_ID_ANNOTATION, SITE_LABEL, SiteResources } from '../src/kube/client.js';
import { createSiteResource } from '../src/kube/site-resource.js';
import type { SiteResource } from '../src/kube/resources.js';
import type { Platform } from '../src/platform/platform.js';
import { Controller, objectKey } from './runtime/controller.js';
import { Informer } from './runtime/informer.js';
import { LeaderElector } from './runtime/leader-election.js';
import { CONTROLLER_NAME, SiteReconciler } from './site/site-reconciler.js';

export interface ControllerManagerOptions {
  config: Config & { kubernetes: KubernetesConfig };
  kubeConfig: KubeConfig;
  platform: Platform;
  logger: Logger;
  /** Default true; tests of a single instance may turn it off. */
  leaderElection?: boolean;
  /** Reconcile workers per controller (default 2). */
  workers?: number;
}

export interface ControllerManager {
  isLeader(): boolean;
  /** Ready: a standby is ready; a leader once its caches are filled. */
  isReady(): boolean;
  stop(): Promise<void>;
}

/**
 * The `controller` role: campaigns for the Lease and, while leading, runs the informers, the
 * Site controller and the periodic resync (every Site re-queued; every database site without a
 * Site resource gets one). Losing the Lease stops all of it until leadership comes back.
 */
export function startControllerManager(options: ControllerManagerOptions): ControllerManager {
  const { config, kubeConfig, logger } = options;
  const kube = config.kubernetes;
  let running: RunningControllers | undefined;

  const startLeading = (): void => {
    logger.info({ identity: kube.podName }, 'leading: starting controllers');
    running = startControllers(options);
  };
  const stopLeading = async (): Promise<void> => {
    const current = running;
    running = undefined;
    await current?.stop();
  };

  const elector =
    options.leaderElection === false
      ? undefined
      : new LeaderElector({
          kubeConfig,
          namespace: kube.namespace,
          leaseName: kube.leaseName,
          identity: kube.podName,
          logger,
          onStartedLeading: startLeading,
          onStoppedLeading: () => {
            logger.warn({ identity: kube.podName }, 'not leading: stopping controllers');
            void stopLeading();
          },
        });
  if (elector) elector.start();
  else startLeading();

  return {
    isLeader: () => running !== undefined,
    isReady: () => (running ? running.synced() : true),
    async stop() {
      // Controllers first (finishing in-flight reconciles), then release the Lease.
      await stopLeading();
      await elector?.stop();
    },
  };
}

interface RunningControllers {
  synced(): boolean;
  stop(): Promise<void>;
}

/** Starts informers at once and the workers once the caches are filled; stop() works at any point. */
function startControllers(options: ControllerManagerOptions): RunningControllers {
  const { config, kubeConfig, platform, logger } = options;
  const kube = config.kubernetes;
  const siteResources = new SiteResources(kubeConfig, kube.namespace, CONTROLLER_NAME);
  const sites = new Informer<SiteResource>({
    name: 'sites',
    kubeConfig,
    path: siteResources.path,
    logger,
  });
  // Only the Ingresses this controller made: a hand edit or deletion brings their Site back in line.
  const ingresses = new Informer<V1Ingress>({
    name: 'ingresses',
    kubeConfig,
    path: `/apis/networking.k8s.io/v1/namespaces/${kube.namespace}/ingresses`,
    labelSelector: `${MANAGED_BY_LABEL}=${CONTROLLER_NAME}`,
    logger,
  });
  const reconciler = new SiteReconciler({ config, kubeConfig, platform, sites, logger });
  const controller = new Controller({ name: 'site', reconciler, workers: options.workers, logger });

  const enqueueSite = (site: SiteResource): void => controller.enqueue(objectKey(site));
  sites.on('add', enqueueSite);
  sites.on('update', enqueueSite);
  sites.on('delete', enqueueSite);
  const enqueueOwner = (ingress: V1Ingress): void => {
    const owner = ingress.metadata?.labels?.[SITE_LABEL];
    if (owner) controller.enqueue(`${kube.namespace}/${owner}`);
  };
  ingresses.on('update', enqueueOwner);
  ingresses.on('delete', enqueueOwner);

  // Level-triggered safety net: every Site again, and every database site without a resource.
  const resync = (): void => {
    for (const site of sites.list()) enqueueSite(site);
    createMissingSiteResources(platform, siteResources, sites.list()).then(
      (created) =>
        created > 0 && logger.info({ created }, 'resync created Site resources for database sites'),
      (err: unknown) => logger.warn({ err }, 'resync failed'),
    );
  };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  void Promise.all([sites.start(), ingresses.start()]).then(() => {
    if (stopped) return;
    controller.start();
    resync();
    timer = setInterval(resync, kube.resyncMs);
    timer.unref();
  });

  return {
    synced: () => sites.hasSynced() && ingresses.hasSynced(),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([sites.stop(), ingresses.stop()]);
      await controller.stop();
    },
  };
}

/**
 * The database → cluster half of the two-way sync: every attached site without a Site resource
 * (created while a resource apply failed, or before cluster mode) gets one.
 */
export async function createMissingSiteResources(
  platform: Platform,
  resources: SiteResources,
  existing: readonly SiteResource[],
): Promise<number> {
  // A resource claims a site by annotation, or by slug while its adoption is still in flight.
  const claimedIds = new Set(existing.map((s) => s.metadata.annotations?.[SITE_ID_ANNOTATION]));
  const claimedSlugs = new Set(existing.map((s) => s.spec.slug));
  let created = 0;
  for (const site of await platform.listSiteRouting()) {
    if (site.detached || claimedIds.has(String(site.siteId)) || claimedSlugs.has(site.slug)) continue;
    const taken = existing.some((s) => s.metadata.name === site.slug);
    const result = await createSiteResource(resources, {
      name: taken ? `${site.slug}-${site.siteId}` : site.slug,
      siteId: site.siteId,
      slug: site.slug,
      customDomains: site.customDomains,
    });
    if (result === 'created') created++;
  }
  return created;
}
