import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import express, { type Express, type Request } from 'express';
import type { BlobStore } from '../blob/index.js';
import type { Config } from '../config/index.js';
import { consoleRoutes } from '../console/index.js';
import type { Edge, SiteRef } from '../edge/index.js';
import {
  buildOpenApi,
  denyFraming,
  docsRoutes,
  errorHandler,
  guardBodies,
  methodNotAllowed,
  normalizeHost,
  notFoundHandler,
  rawDispatch,
  requestLifecycle,
  RouteRegistry,
  toOriginForm,
  type Authenticators,
  type DomainModule,
  type FastPath,
  type HostRoute,
} from '../http/index.js';
import { boundRequestMetrics, type Logger } from '../observability/index.js';
import type { Store } from '../store/index.js';
import { readiness } from './probes.js';
import type { AppRole } from './roles.js';

/** What the app is assembled from: the shared parts, the edge, and the list of domain modules. */
export interface AppParts {
  config: Config;
  logger: Logger;
  store: Store;
  blobs: BlobStore;
  edge: Edge;
  authenticators: Authenticators;
  modules: DomainModule[];
  /** A SQLite shard's own readiness: its databases restored and leased (roles all and sqlite). */
  shardReady?: () => boolean;
}

/**
 * The HTTP app of a role. `all` serves the API on the base host and sites on their own hosts
 * (subdomains of the sites domain and custom domains); health and metrics answer on every other host.
 * `sqlite` serves the routes of its modules (the SQLite domain's only) and the probes, on any
 * host: no sites, no API documents.
 */
export function createApp(parts: AppParts, role: AppRole): RequestListener {
  const { config, logger } = parts;
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');
  app.use(requestLifecycle({ role, logger, spans: 'all' }));
  // The API host is the console's origin: none of its answers may be framed (see denyFraming).
  app.use(denyFraming);

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', readiness(parts, logger, role));

  let fastPath: FastPath | undefined;
  if (role === 'edge') {
    // Reached only by hosts that are not sites (see siteHostsFirst): nothing else answers there.
    app.use(notFoundHandler);
  } else {
    const registry = new RouteRegistry(parts.authenticators);
    const routers = parts.modules.flatMap((module) => (module.routes ? [module.routes(registry)] : []));
    app.use(methodNotAllowed(registry.docs));
    for (const router of routers) app.use(router);
    fastPath = rawDispatch(registry, { role, logger });
    if (role !== 'sqlite') apiDocuments(app, registry, config);
    app.use(notFoundHandler);
  }
  app.use(errorHandler(logger));
  const api = fastPath ? fastPathFirst(app, fastPath) : app;
  // Neither api nor sqlite serves sites: the chart routes only the API host to them.
  const served = role === 'api' || role === 'sqlite' ? api : siteHostsFirst(api, parts, role);
  // Every body reader of every role is held to the body deadline.
  const guarded = guardBodies(served, config.requests.body, logger);
  // An absolute-form target's authority is the request's host (RFC 9112 §3.2.2), for every role.
  const refused = boundRequestMetrics(role, 'request_target');
  return (req, res) => {
    if (toOriginForm(req, res)) guarded(req, res);
    else refused(req.method ?? 'GET', 400, 0);
  };
}

/** The OpenAPI document, the docs pages and the console (on the API's own host, an IP or localhost). */
function apiDocuments(app: Express, registry: RouteRegistry, config: Config): void {
  const openapi = buildOpenApi(registry.docs, config.baseUrl, registry.components);
  app.get('/api/v1/openapi.json', (_req, res) => void res.json(openapi));
  const apiHost = new URL(config.baseUrl).hostname;
  const isApiHost = (req: Request) => {
    const raw = req.get('host');
    if (raw === undefined || raw.startsWith('[')) return true; // no Host (HTTP/1.0), or IPv6
    const host = normalizeHost(raw); // undefined: malformed, never the API's host
    return host !== undefined && (host === apiHost || host === 'localhost' || isIP(host) !== 0);
  };
  app.use(docsRoutes(isApiHost));
  app.use(consoleRoutes({ isApiHost }));
}

/** The routes served raw (the hottest API calls, without Express), then Express. */
function fastPathFirst(app: Express, fastPath: FastPath): RequestListener {
  return (req, res) => {
    const toExpress = () => void app(req, res);
    if (!fastPath(req, res, toExpress)) toExpress();
  };
}

/**
 * Site hosts (subdomains of the sites domain and custom domains) go to the edge before anything
 * else, straight from node:http without Express: a customer's domain never exposes the API or
 * health, and the hot path pays for no middleware. Probes reach the pod by IP or the API host.
 * The `edge` role answers every other path of a non-site host with the edge's 404 page too.
 */
function siteHostsFirst(app: RequestListener, parts: AppParts, role: AppRole): RequestListener {
  const edge = parts.edge.createHandler(parts.logger, role);
  const dispatch = (req: IncomingMessage, res: ServerResponse, route: HostRoute<SiteRef>) => {
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
