import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlobStore } from '../blob/index.js';
import type { Config } from '../config/index.js';
import type { FilesService } from '../files/index.js';
import type { HostHandler } from '../http/index.js';
import {
  accessLogDecider,
  boundRequestMetrics,
  logRequestCompleted,
  requestIdOf,
  startSampledServerSpan,
  withSampledSpan,
  type Logger,
  type SampledSpan,
} from '../observability/index.js';
import type { Platform, SiteEvents } from '../platform/index.js';
import { EdgeCache, type EdgeOptions, type Resolution, type SiteRef } from './cache.js';
import { sendEntry, sendFixed, sendRedirect } from './respond.js';

/** Serves the requests of site hosts; what createHandler returns. */
export type SiteHandler = HostHandler<SiteRef>;

/**
 * Serves sites by Host, straight on node:http (no Express on this path): host → site, path →
 * entry, bytes and headers from memory. Holds no state beyond caches (see EdgeCache).
 */
export class Edge {
  readonly cache: EdgeCache;

  constructor(
    private readonly config: Config,
    platform: Platform,
    files: FilesService,
    blobs: BlobStore,
    events: SiteEvents,
    options: EdgeOptions = {},
  ) {
    this.cache = new EdgeCache(config, platform, files, blobs, events, options);
  }

  close(): void {
    this.cache.close();
  }

  /** The request handler of a role, with its metrics, sampled spans and access log. */
  createHandler(logger: Logger, role: string): SiteHandler {
    const cache = this.cache;
    const record = boundRequestMetrics(role, 'edge');
    const { traceSampleRatio, accessLog, accessLogSampleRatio } = this.config.edge;
    const logThis = accessLogDecider(accessLog, accessLogSampleRatio);

    const finish = (
      req: IncomingMessage,
      status: number,
      started: number,
      requestId: string,
      sampled: SampledSpan | undefined,
    ) => {
      const ms = performance.now() - started;
      record(req.method ?? 'GET', status, ms / 1000);
      if (sampled) {
        sampled.span.setAttribute('http.response.status_code', status);
        sampled.span.end();
      }
      if (status >= 500 || logThis())
        logRequestCompleted(
          logger,
          { id: requestId, method: req.method, url: req.url, headers: req.headers },
          status,
          ms,
        );
    };

    const answer = (
      req: IncomingMessage,
      res: ServerResponse,
      site: SiteRef | undefined,
      requestId: string,
    ): number | Promise<number> => {
      const head = req.method === 'HEAD';
      if (req.method !== 'GET' && !head) return sendFixed(res, 405, requestId, 'method', false);
      if (!site) return sendFixed(res, 404, requestId, 'noSite', head);
      const url = target(req.url ?? '/');
      const query = url.indexOf('?');
      const urlPath = query < 0 ? url : url.slice(0, query);
      const resolved = cache.cachedResolution(site.id, urlPath);
      if (resolved) return respond(req, res, resolved, url, query, requestId, head);
      return cache.resolve(site.id, urlPath).then((r) => respond(req, res, r, url, query, requestId, head));
    };

    const respond = (
      req: IncomingMessage,
      res: ServerResponse,
      resolution: Resolution,
      url: string,
      query: number,
      requestId: string,
      head: boolean,
    ): number | Promise<number> => {
      if (resolution.type === 'file') return sendEntry(cache, req, res, resolution.entry, 200, requestId);
      if (resolution.type === 'redirect')
        return sendRedirect(res, resolution.path + (query < 0 ? '' : url.slice(query)), requestId, head);
      if (resolution.page) return sendEntry(cache, req, res, resolution.page, 404, requestId);
      return sendFixed(res, 404, requestId, 'noPage', head);
    };

    return {
      cachedHost: (hostHeader) => cache.cachedHost(hostHeader),
      lookupHost: (hostHeader) => cache.lookupHost(hostHeader),
      serve(req, res, site) {
        const started = performance.now();
        const requestId = requestIdOf(req.headers);
        const sampled = startSampledServerSpan(`${req.method} edge`, req.headers, traceSampleRatio, () => ({
          'http.request.method': req.method ?? '',
          'url.path': (req.url ?? '').split('?')[0] ?? '',
        }));
        const failed = (err: unknown) => {
          logger.error({ err, reqId: requestId }, 'edge request failed');
          if (!res.headersSent) return sendFixed(res, 503, requestId, 'unavailable', req.method === 'HEAD');
          res.destroy();
          return 503;
        };
        let status: number | Promise<number>;
        try {
          status = withSampledSpan(sampled, () => answer(req, res, site, requestId));
        } catch (err) {
          status = failed(err);
        }
        if (typeof status === 'number') finish(req, status, started, requestId, sampled);
        else
          status.then(
            (s) => finish(req, s, started, requestId, sampled),
            (err: unknown) => finish(req, failed(err), started, requestId, sampled),
          );
      },
    };
  }
}

/** The path-and-query of a request target (absolute-form, as proxies send it, reduced to origin-form). */
function target(url: string): string {
  if (url.startsWith('/')) return url;
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    return '/';
  }
}
