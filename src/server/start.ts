import http, { type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { openBlobStore, type BlobStore } from '../blob/index.js';
import { siteUrl, type Config } from '../config/index.js';
import { Edge, type EdgeOptions } from '../edge/index.js';
import { DeploysService, FilesService, filesModule, fileTypesWith } from '../files/index.js';
import {
  ADDRESS_MAIL_LIMITS,
  ClusterFormsService,
  FormsService,
  formsModule,
  NotificationAddresses,
  Submissions,
  SUBMIT_RATE_LIMIT,
} from '../forms/index.js';
import { UploadAdmission, type DomainModule } from '../http/index.js';
import { MailOutbox, mailModule } from '../mail/index.js';
import { mcpModule } from '../mcp/index.js';
import { createLogger, type Logger } from '../observability/index.js';
import { authenticators, Platform, platformModule, SiteEvents } from '../platform/index.js';
import { PUBLISH_RATE_LIMIT, PublishService, publishModule } from '../publish/index.js';
import { createRateLimiter, sweepRateLimits, type RateLimit } from '../ratelimit/index.js';
import { SqliteDatabases, sqliteRuntime } from '../sqlite/index.js';
import { openStoreForRole, StandInProbes, untilReachable, type Store } from '../store/index.js';
import { ACCOUNT_RATE_LIMITS, accountHooks, platformOptions, upgradeUrlOf } from './account-wiring.js';
import { adminCommands, startAdminSocket } from './admin-socket.js';
import { createApp } from './app.js';
import { startSweeps, storeUpkeep } from './sweeps.js';
import { closeNow, metricsBeside } from './listen.js';
import { isApiRole, isShardRole, isSiteRole, type AppRole } from './roles.js';
import { clusterSiteHook, confirmByMail, formsHooks, notifyByMail } from './wiring.js';

/** The services of a running server (tests reach into them). */
export interface Services {
  config: Config;
  logger: Logger;
  store: Store;
  blobs: BlobStore;
  platform: Platform;
  files: FilesService;
  deploys: DeploysService;
  publish: PublishService;
  forms: FormsService;
  submissions: Submissions;
  edge: Edge;
}

export interface RunningServer {
  url: string;
  port: number;
  /** Where /metrics answers (its own port). */
  metricsUrl: string;
  services: Services;
  close(): Promise<void>;
}

export interface StartOptions {
  role?: AppRole;
  logger?: Logger;
  /** Injected by tests that share one store or blob store; otherwise opened from config. */
  store?: Store;
  blobs?: BlobStore;
  edge?: EdgeOptions;
  /** Run background sweeps (temporary pages, expired keys, orphan blobs, mail). Default: true for api/all. */
  worker?: boolean;
  /** Serve the admin socket in the data dir. Default: true for api/all. */
  adminSocket?: boolean;
  /** How long close() lets in-flight requests finish before cutting them. Default 25 s. */
  drainMs?: number;
  /** Cluster mode: where Form resources are applied (default: the service account or $KUBECONFIG). */
  kubeConfig?: KubeConfig;
}

/** Wires the services for a role and starts listening. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const role = options.role ?? 'all';
  const logger = options.logger ?? createLogger(config.logLevel, undefined, config.logFormat);
  const ownsStore = !options.store;
  // Checked before anything starts: an extension the server cannot serve is a configuration error.
  const fileTypes = fileTypesWith(config.extraFileTypes);
  // Standalone (role all) migrates under the lock; api and edge wait for `hostplane migrate`.
  // While start-up waits (the database, its schema, the blob store), the port answers the probes.
  const standIn = new StandInProbes(config);
  let store: Store;
  let blobs: BlobStore;
  try {
    store = await openStoreForRole(config, {
      policy: role === 'all' ? 'migrate' : 'wait',
      logger,
      store: options.store,
      probes: config,
      standIn,
    });
    try {
      blobs =
        options.blobs ??
        (await untilReachable(() => openBlobStore(config, logger), { logger, probes: standIn }));
    } catch (err) {
      if (ownsStore) await store.close();
      throw err;
    }
  } finally {
    await standIn.down();
  }
  const events = new SiteEvents();
  await events.listen(store);
  const platform = new Platform(store.db, platformOptions(config));
  const upgradeUrl = upgradeUrlOf(config);
  const files = new FilesService(store.db, blobs, platform, events, upgradeUrl, fileTypes);
  const deploys = new DeploysService(
    store.db,
    blobs,
    files,
    platform,
    upgradeUrl,
    config.edge.syncWindowMs,
    config.deployIdleMs,
    events,
  );
  const publish = new PublishService(store.db, {
    pages: config.tempPages.maxPages,
    bytes: config.tempPages.maxBytes,
  });
  const publishLimiter = createRateLimiter(store.db, {
    name: 'publish',
    points: PUBLISH_RATE_LIMIT.perMinute,
    durationSeconds: 60,
  });
  // Only the roles that answer the API send mail (and report the outbox's depth on /metrics).
  const outbox = isApiRole(role) ? new MailOutbox(store.db, config.mail, logger) : undefined;
  // New notification addresses are confirmed by a mailed link before they get submissions.
  const addresses = new NotificationAddresses(store.db, platform, {
    baseUrl: config.baseUrl,
    mailer: confirmByMail(config),
    limiters: {
      perAddress: createRateLimiter(store.db, ADDRESS_MAIL_LIMITS.perAddress),
      perAccount: createRateLimiter(store.db, ADDRESS_MAIL_LIMITS.perAccount),
      confirmPerClient: createRateLimiter(store.db, ADDRESS_MAIL_LIMITS.confirmPerClient),
    },
  });
  const formHooks = { ...formsHooks(upgradeUrl), addresses };
  // Cluster mode: each form write is followed by its Form resource.
  const forms = config.kubernetes
    ? new ClusterFormsService(store.db, platform, formHooks, {
        namespace: config.kubernetes.namespace,
        requestTimeoutMs: config.kubernetes.requestTimeoutMs,
        kubeConfig: options.kubeConfig,
        logger,
      })
    : new FormsService(store.db, platform, formHooks);
  const submissions = new Submissions(store.db, platform, notifyByMail(config), addresses);
  const submitLimiter = createRateLimiter(store.db, {
    name: 'form_submit',
    points: SUBMIT_RATE_LIMIT.perMinute,
    durationSeconds: 60,
  });
  const sqlite = await sqliteRuntime({
    config,
    store,
    events,
    platform,
    files,
    logger,
    // Cluster mode: a database's first install is followed by its SqliteDatabase resource.
    resources: config.kubernetes && {
      namespace: config.kubernetes.namespace,
      requestTimeoutMs: config.kubernetes.requestTimeoutMs,
      kubeConfig: options.kubeConfig,
      logger,
    },
  });
  // Only a role that serves sites sends the edge's sync NOTIFYs (four a second).
  // …and only such a role keeps large blobs on disk.
  const edgeOptions = isSiteRole(role)
    ? { logger, ...options.edge }
    : { ...options.edge, syncWindowMs: null, diskCacheBytes: 0 };
  const edge = new Edge(config, platform, files, deploys, blobs, events, edgeOptions);
  const siteCreated = clusterSiteHook(config, logger);
  const accountLimiter = (limit: RateLimit) => createRateLimiter(store.db, limit);
  const databases = new SqliteDatabases({
    db: store.db,
    platform,
    files,
    replicas: blobs,
    replica: config.sqliteReplication,
  });
  const account = {
    baseUrl: config.baseUrl,
    siteUrl: (slug: string) => siteUrl(config, slug),
    logger,
    hooks: accountHooks({
      config,
      platform,
      forms,
      submissions,
      addresses,
      databases,
      deploys,
      limiters: {
        perAddress: ACCOUNT_RATE_LIMITS.perAddress.map(accountLimiter),
        perEmail: ACCOUNT_RATE_LIMITS.perEmail.map(accountLimiter),
        signIn: {
          perEmail: ACCOUNT_RATE_LIMITS.signInPerEmail.map(accountLimiter),
          perDevice: ACCOUNT_RATE_LIMITS.signInPerDevice.map(accountLimiter),
        },
        secondFactor: ACCOUNT_RATE_LIMITS.secondFactor.map(accountLimiter),
      },
      siteCreated,
      logger,
    }),
  };
  const services: Services = {
    config,
    logger,
    store,
    blobs,
    platform,
    files,
    deploys,
    publish,
    forms,
    submissions,
    edge,
  };
  // The MCP tools call the app's own listener in-process: bound once the app is built below.
  const built: { app?: RequestListener } = {};
  const ownListener = () => {
    if (!built.app) throw new Error('the app is not built yet');
    return built.app;
  };
  // One byte budget for every upload this process reads (files, videos, blobs, large /mcp bodies).
  const uploads = new UploadAdmission(config.uploads);
  // The sqlite role is the SQLite data plane only: its routes, no other domain's routes or sweeps.
  const modules: DomainModule[] =
    role === 'sqlite'
      ? [sqlite.module]
      : [
          platformModule(platform, account),
          filesModule({ config, platform, files, deploys, uploads }),
          publishModule({ config, publish, limiter: publishLimiter, logger }),
          formsModule({ config, platform, forms, submissions, addresses, limiter: submitLimiter, logger }),
          ...(outbox ? [mailModule({ outbox })] : []),
          sqlite.module,
          mcpModule({
            config,
            logger,
            authenticateKey: async (key) => (await platform.authenticateKey(key)) !== undefined,
            listener: ownListener,
            uploads,
          }),
          {
            name: 'ratelimit',
            sweeps: [{ name: 'rate_limits', everyMs: 10 * 60_000, run: () => sweepRateLimits(store.db) }],
          },
          ...storeUpkeep(store, logger),
          {
            // Replicas of databases removed with their site, deleted again once their lease is over.
            name: 'sqlite_replicas',
            sweeps: [
              { name: 'sqlite_replicas', everyMs: 60_000, run: () => databases.sweepReplicas(logger) },
            ],
          },
        ];
  const shard = isShardRole(role);

  const app = createApp(
    {
      config,
      logger,
      store,
      blobs,
      edge,
      authenticators: authenticators(platform, config.baseUrl),
      modules,
      shardReady: shard ? () => sqlite.ready() : undefined,
    },
    role,
  );
  built.app = app;
  const { headersTimeoutMs, requestTimeoutMs } = config.requests;
  const server = http.createServer(
    {
      // A slowloris on the request line and headers holds a socket: Node's own deadlines, checked
      // every second (its default: every 30 s) so they hold near their value.
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, headersTimeoutMs),
    },
    app,
  );
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  const metrics = await metricsBeside(server, config);
  // A standalone process is its own SQLite shard, a sqlite process one of the cluster's (the api
  // role is none: it forwards). Should the database be lost since start-up began, registering
  // waits for it, with /readyz at 503 meanwhile.
  if (role === 'sqlite' && !config.sqliteShard.url)
    logger.warn(
      { url: `http://127.0.0.1:${port}` },
      'HOSTPLANE_SQLITE_SHARD_URL is unset: api processes on other hosts cannot reach this shard',
    );
  if (shard) await untilReachable(() => sqlite.startShard(`http://127.0.0.1:${port}`), { logger });

  const stops: Array<() => Promise<void> | void> = [];
  const hasApi = isApiRole(role);
  if (options.adminSocket ?? hasApi) {
    try {
      stops.push(
        await startAdminSocket(
          config.dataDir,
          adminCommands(platform, (slug) => siteUrl(config, slug), siteCreated, store.db),
          logger,
        ),
      );
    } catch (err) {
      // Nothing started here may outlive a failed start (tests and embedders keep running).
      await closeNow(server);
      await metrics.close();
      edge.close();
      await sqlite.close();
      await events.close();
      if (ownsStore) await store.close();
      throw err;
    }
  }
  if (options.worker ?? hasApi) stops.push(startSweeps(modules, logger));
  logger.info({ role, port, database: store.kind, blobs: blobs.kind }, 'hostplane listening');
  // Said once, where the operator reads: without SMTP no mail leaves (the console says so too).
  if (hasApi && !config.mail.smtpUrl)
    logger.warn(
      { mail: 'off' },
      'mail is off: SMTP_URL is not set, so no sign-up, reset, invitation or form notification mail is sent (they stay in the outbox)',
    );

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    metricsUrl: metrics.url,
    services,
    async close() {
      for (const stop of stops.reverse()) await stop();
      // Finish in-flight requests (an upload during a rolling deploy), then cut what is left. A
      // keep-alive client is told to go elsewhere with its next answer, so draining has an end.
      server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) =>
        res.setHeader('connection', 'close'),
      );
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = new Promise<void>((resolve) => setTimeout(resolve, options.drainMs ?? 25_000).unref());
      await Promise.race([closed, deadline]);
      server.closeAllConnections();
      await closed;
      await metrics.close();
      edge.close();
      await sqlite.close();
      await events.close();
      if (ownsStore) await store.close();
    },
  };
}
