import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
// controllers/ is a layer beside this one, not a domain: its manager.ts is its face.
import type { ControllerManager } from '../../controllers/manager.js';
import path from 'node:path';
import { FsBlobStore, S3BlobStore, type BlobStore } from '../blob/index.js';
import type { Config } from '../config/index.js';
import { AppError } from '../errors/index.js';
import { FilesService } from '../files/index.js';
import { FormsService } from '../forms/index.js';
import { createLogger, type Logger, type MetricsServer } from '../observability/index.js';
import { Platform, SiteEvents } from '../platform/index.js';
import { SqliteDatabases } from '../sqlite/index.js';
import { CHANNELS, openStoreForRole, type Store } from '../store/index.js';
import { closeNow, metricsBeside } from './listen.js';
import { createControllerApp } from './probes.js';
import { formsHooks } from './wiring.js';
import { upgradeUrlOf } from './account-wiring.js';

/**
 * The `controller` role: leader-elected reconcilers plus /healthz, /readyz and /metrics. Needs
 * cluster mode (HOSTPLANE_KUBERNETES=true) and the control-plane database.
 */
export async function startController(
  config: Config,
  options: StartControllerOptions = {},
): Promise<RunningController> {
  const kube = config.kubernetes;
  if (!kube)
    throw new AppError('CONFIG_INVALID', {
      message: 'the controller role needs cluster mode: set HOSTPLANE_KUBERNETES=true',
    });
  const logger = options.logger ?? createLogger(config.logLevel, undefined, config.logFormat);
  const ownsStore = !options.store;
  const store = await openStoreForRole(config, {
    policy: 'wait',
    logger,
    store: options.store,
    probes: config,
  });
  // Loaded here: the Kubernetes client takes ~0.4 s to load, and standalone never needs it.
  const [{ startControllerManager }, { kubeConfigFromEnvironment }] = await Promise.all([
    import('../../controllers/manager.js'),
    import('../kube/index.js'),
  ]);
  const platform = new Platform(store.db);
  // S3 when configured: the bucket the shards' Litestream replicates into, where the
  // SqliteDatabase controller deletes replicas. Only database entries are written to the file
  // index (no bytes), so a local store (nothing replicated) does too.
  // No call at start: a bucket out of reach fails the cleanup that needs it, not the controller.
  const blobs =
    options.blobs ??
    (config.s3
      ? new S3BlobStore(config.s3)
      : new FsBlobStore(path.join(config.dataDir, 'files'), { logger }));
  const upgradeUrl = upgradeUrlOf(config);
  const sqlite = new SqliteDatabases({
    db: store.db,
    platform,
    files: new FilesService(store.db, blobs, platform, new SiteEvents(), upgradeUrl),
    replicas: blobs,
    replica: config.sqliteReplication,
  });
  // Databases moved to another shard (a failover, a drain) or that a failover cannot move: their
  // resources' status follows at once.
  const moves = new EventEmitter();
  const unlisten = await store.listen(CHANNELS.sqlitePlacement, (payload) =>
    moves.emit('moved', Number(payload)),
  );
  const manager = startControllerManager({
    config: { ...config, kubernetes: kube },
    kubeConfig: options.kubeConfig ?? kubeConfigFromEnvironment(),
    platform,
    forms: new FormsService(store.db, platform, formsHooks(upgradeUrl)),
    sqlite,
    logger,
    leaderElection: options.leaderElection,
    cacheSyncDeadlineMs: options.cacheSyncDeadlineMs,
    requestTimeoutMs: kube.requestTimeoutMs,
    databaseMoves: (onMoved) => {
      moves.on('moved', onMoved);
      return () => moves.off('moved', onMoved);
    },
  });
  const app = createControllerApp(
    logger,
    async () => {
      await store.ping();
      return manager.isReady();
    },
    () => manager.isHealthy(),
  );
  const server = http.createServer(app);
  let metrics: MetricsServer;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, resolve);
    });
    metrics = await metricsBeside(server, config);
  } catch (err) {
    // A controller that cannot serve its probes must not keep leading (it would hold the Lease).
    await manager.stop();
    await unlisten().catch(() => undefined);
    if (ownsStore) await store.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  logger.info(
    { role: 'controller', port, namespace: kube.namespace, identity: kube.podName },
    'hostplane listening',
  );
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    metricsUrl: metrics.url,
    manager,
    async close() {
      await manager.stop();
      await unlisten().catch(() => undefined);
      await closeNow(server);
      await metrics.close();
      if (ownsStore) await store.close();
    },
  };
}

export interface StartControllerOptions {
  logger?: Logger;
  store?: Store;
  kubeConfig?: KubeConfig;
  leaderElection?: boolean;
  cacheSyncDeadlineMs?: number;
  /** Where the SQLite replicas are (tests: the fixture's MinIO bucket); default: S3 from config. */
  blobs?: BlobStore;
}

export interface RunningController {
  url: string;
  port: number;
  /** Where /metrics answers (its own port). */
  metricsUrl: string;
  manager: ControllerManager;
  close(): Promise<void>;
}
