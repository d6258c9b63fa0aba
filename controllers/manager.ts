import type { KubeConfig, V1Ingress } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Config, KubernetesConfig } from '../src/config/config.js';
import { MANAGED_BY_LABEL, SITE_ID_ANNOTATION, SiteResources } from '../src/kube/client.js';
import { createSiteResource } from '../src/kube/site-resource.js';
import { siteKind, type SiteResource } from '../src/kube/resources.js';
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
  /** Default CACHE_SYNC_DEADLINE_MS. */
  cacheSyncDeadlineMs?: number;
}

/** A leader whose caches are still empty after this long reports unhealthy (see isHealthy). */
export const CACHE_SYNC_DEADLINE_MS = 120_000;

export interface ControllerManager {
  isLeader(): boolean;
  /**
   * False when this replica leads but could not fill its caches in time (e.g. RBAC denies the
   * list): liveness fails, the pod restarts and releases the Lease to a replica that may do better.
   */
  isHealthy(): boolean;
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
  // Start and stop run one after the other: leadership regained while the previous controllers
  // still drain must not run two sets of workers at once.
  let transition: Promise<void> = Promise.resolve();

  const startLeading = (): void => {
    transition = transition.then(() => {
      logger.info({ identity: kube.podName }, 'leading: starting controllers');
      running = startControllers(options);
    });
  };
  const stopLeading = (): Promise<void> => {
    transition = transition.then(async () => {
      const current = running;
      running = undefined;
      await current?.stop();
    });
    return transition;
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
    isHealthy: () =>
      !running ||
      running.synced() ||
      Date.now() - running.startedAt < (options.cacheSyncDeadlineMs ?? CACHE_SYNC_DEADLINE_MS),
    async stop() {
      // Controllers first (finishing in-flight reconciles), then release the Lease.
      await stopLeading();
      await elector?.stop();
    },
  };
}

interface RunningControllers {
  startedAt: number;
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
    const owner = ingress.metadata?.ownerReferences?.find((o) => o.controller && o.kind === siteKind.kind);
    if (owner) controller.enqueue(`${kube.namespace}/${owner.name}`);
  };
  ingresses.on('update', enqueueOwner);
  ingresses.on('delete', enqueueOwner);

  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let resyncing: Promise<void> = Promise.resolve();
  // Level-triggered safety net: every Site again, and every database site without a resource.
  const resync = (): void => {
    for (const site of sites.list()) enqueueSite(site);
    resyncing = createMissingSiteResources(
      platform,
      siteResources,
      () => sites.list(),
      () => stopped,
    ).then(
      (created) => {
        if (created > 0) logger.info({ created }, 'resync created Site resources for database sites');
      },
      (err: unknown) => logger.warn({ err }, 'resync failed'),
    );
  };
  void Promise.all([sites.start(), ingresses.start()]).then(() => {
    if (stopped) return;
    controller.start();
    resync();
    timer = setInterval(resync, kube.resyncMs);
    timer.unref();
  });

  return {
    startedAt: Date.now(),
    synced: () => sites.hasSynced() && ingresses.hasSynced(),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([sites.stop(), ingresses.stop()]);
      await controller.stop();
      await resyncing;
    },
  };
}

/**
 * The database → cluster half of the two-way sync: every attached site that no Site resource
 * controls or names (created while a resource apply failed, or before cluster mode) gets one.
 * The database is read before the cache, so a site adopted meanwhile is already in the cache.
 */
export async function createMissingSiteResources(
  platform: Platform,
  resources: SiteResources,
  cachedSites: () => readonly SiteResource[],
  stopped: () => boolean = () => false,
): Promise<number> {
  const databaseSites = await platform.listSiteRouting();
  const existing = cachedSites();
  const liveUids = new Set(existing.map((s) => s.metadata.uid));
  const annotatedIds = new Set(existing.map((s) => s.metadata.annotations?.[SITE_ID_ANNOTATION]));
  const names = new Set(existing.map((s) => s.metadata.name));
  let created = 0;
  for (const site of databaseSites) {
    if (stopped()) break;
    if (site.detached || annotatedIds.has(String(site.siteId))) continue;
    if (site.resourceUid !== null && liveUids.has(site.resourceUid)) continue;
    const result = await createSiteResource(resources, {
      name: names.has(site.slug) ? `site-${site.siteId}` : site.slug,
      siteId: site.siteId,
      slug: site.slug,
      customDomains: site.customDomains,
    });
    if (result === 'created') created++;
  }
  return created;
}
