import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import express, { type Express } from 'express';
import type { BlobStore } from '../blob/index.js';
import type { Config } from '../config/index.js';
import { normalizeHost, type Edge, type HostRoute } from '../edge/index.js';
import { boundRequestMetrics, type Logger } from '../observability/index.js';
import type { Store } from '../store/index.js';
import { guardBodies } from './body-deadline.js';
import { errorHandler, notFoundHandler } from './errors.js';
import { requestLogging, requestMetrics, requestTracing } from './middleware.js';
import type { Authenticators, DomainModule } from './module.js';
import { docsRoutes } from './docs.js';
import { buildOpenApi } from './openapi.js';
import { toOriginForm } from './request-target.js';
import { methodNotAllowed, RouteRegistry } from './route.js';

/** Roles served by createApp; the `controller` role has its own small app (createControllerApp). */
export type Role = 'all' | 'api' | 'edge';

/** What the app is assembled from: the shared parts, the edge, and the list of domain modules. */
export interface AppParts {
  config: Config;
  logger: Logger;
  store: Store;
  blobs: BlobStore;
  edge: Edge;
  authenticators: Authenticators;
  modules: DomainModule[];
}

/**
 * The HTTP app of a role. `all` serves the API on the base host and sites on their own hosts
 * (subdomains of the sites domain and custom domains); health and metrics answer on every other host.
 */
export function createApp(parts: AppParts, role: Role): RequestListener {
  const { config, logger, store, blobs } = parts;
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');
  app.use(requestMetrics(role));
  app.use(requestTracing());
  app.use(requestLogging(logger));

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  // Readiness: the api (and all) roles need the database and the blob store for every request,
  // so they are unready without them. The edge stays ready through a database or S3 blip: it
  // still serves what it has cached, and taking every edge pod out of its Service at once would
  // turn a blip into an outage. It reports itself degraded instead.
  app.get('/readyz', async (_req, res) => {
    try {
      await withDeadline(Promise.all([store.ping(), blobs.ping()]), 2_000);
      res.json({ status: 'ok' });
    } catch (err) {
      logger.warn({ err }, role === 'edge' ? 'degraded: serving from cache' : 'not ready');
      if (role === 'edge')
        res.json({ status: 'degraded', message: 'database or blob store unreachable; serving from cache' });
      else res.status(503).json({ status: 'unavailable', message: 'database or blob store unreachable' });
    }
  });

  if (role === 'edge') {
    // Reached only by hosts that are not sites (see siteHostsFirst): nothing else answers there.
    app.use(notFoundHandler);
  } else {
    const registry = new RouteRegistry(parts.authenticators);
    const routers = parts.modules.flatMap((module) => (module.routes ? [module.routes(registry)] : []));
    app.use(methodNotAllowed(registry.docs));
    for (const router of routers) app.use(router);
    const openapi = buildOpenApi(registry.docs, config.baseUrl, registry.components);
    app.get('/api/v1/openapi.json', (_req, res) => void res.json(openapi));
    const apiHost = new URL(config.baseUrl).hostname;
    app.use(
      docsRoutes((req) => {
        const raw = req.get('host');
        if (raw === undefined || raw.startsWith('[')) return true; // no Host (HTTP/1.0), or IPv6
        const host = normalizeHost(raw); // undefined: malformed, never the API's host
        return host !== undefined && (host === apiHost || host === 'localhost' || isIP(host) !== 0);
      }),
    );
    app.use(notFoundHandler);
  }
  app.use(errorHandler(logger));
  const api = role === 'edge' ? app : fastPathsFirst(app, parts, role);
  const served = role === 'api' ? api : siteHostsFirst(api, parts, role);
  // Every body reader of every role is held to the body deadline.
  const guarded = guardBodies(served, config.requests.body, logger);
  // An absolute-form target's authority is the request's host (RFC 9112 §3.2.2), for every role.
  const refused = boundRequestMetrics(role, 'request_target');
  return (req, res) => {
    if (toOriginForm(req, res)) guarded(req, res);
    else refused(req.method ?? 'GET', 400, 0);
  };
}

/** The domains' fast paths (their hottest API calls, without Express), then Express. */
function fastPathsFirst(app: Express, parts: AppParts, role: Role): RequestListener {
  const paths = parts.modules.flatMap((module) =>
    module.fastPath ? [module.fastPath({ role, logger: parts.logger })] : [],
  );
  if (paths.length === 0) return app;
  return (req, res) => {
    const toExpress = () => void app(req, res);
    for (const path of paths) if (path(req, res, toExpress)) return;
    toExpress();
  };
}

/**
 * Site hosts (subdomains of the sites domain and custom domains) go to the edge before anything
 * else, straight from node:http without Express: a customer's domain never exposes the API or
 * health, and the hot path pays for no middleware. Probes reach the pod by IP or the API host.
 * The `edge` role answers every other path of a non-site host with the edge's 404 page too.
 */
function siteHostsFirst(app: RequestListener, parts: AppParts, role: Role): RequestListener {
  const edge = parts.edge.createHandler(parts.logger, role);
  const dispatch = (req: IncomingMessage, res: ServerResponse, route: HostRoute) => {
    if (route.serve) return edge.serve(req, res, route.site);
    if (role === 'edge' && !isProbe(req.url)) return edge.serve(req, res, undefined);
    void app(req, res);
  };
  return (req, res) => {
    const host = req.headers.host;
    const cached = edge.cachedHost(host);
    if (cached) return dispatch(req, res, cached);
    edge.lookupHost(host).then(
      (route) => dispatch(req, res, route),
      (err: unknown) => {
        parts.logger.error({ err }, 'host lookup failed');
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' });
        res.end('Service Unavailable');
      },
    );
  };
}

const isProbe = (url: string | undefined) => {
  const path = (url ?? '/').split('?')[0];
  return path === '/healthz' || path === '/readyz';
};

/** The controller role's HTTP surface: health, readiness and metrics only. */
export function createControllerApp(
  logger: Logger,
  isReady: () => Promise<boolean>,
  isHealthy: () => boolean,
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestMetrics('controller'));
  app.use(requestLogging(logger));
  app.get('/healthz', (_req, res) => {
    if (isHealthy()) res.json({ status: 'ok' });
    else
      res.status(503).json({ status: 'unhealthy', message: 'leading, but the caches could not be filled' });
  });
  app.get('/readyz', async (_req, res) => {
    const ready = await isReady().catch((err: unknown) => {
      logger.warn({ err }, 'not ready');
      return false;
    });
    if (ready) res.json({ status: 'ok' });
    else
      res.status(503).json({ status: 'unavailable', message: 'database unreachable or caches not filled' });
  });
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return app;
}

/** Rejects when `promise` has not settled within `ms` (a hung dependency must not hang a probe). */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
