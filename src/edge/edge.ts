import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlobStore } from '../blob/index.js';
import type { Config } from '../config/index.js';
import type { DeploysService, FilesService } from '../files/index.js';
import { lifecycleHandler, type HostHandler } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import type { Platform, SiteEvents } from '../platform/index.js';
import { EdgeCache, NO_SUCH_PREVIEW, type EdgeOptions, type Resolution, type SiteRef } from './cache.js';
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
    deploys: DeploysService,
    blobs: BlobStore,
    events: SiteEvents,
    options: EdgeOptions = {},
  ) {
    this.cache = new EdgeCache(config, platform, files, deploys, blobs, events, options);
  }

  close(): void {
    this.cache.close();
  }

  /** The request handler of a role, in the request lifecycle with sampled spans and access log. */
  createHandler(logger: Logger, role: string): SiteHandler {
    const cache = this.cache;
    const { traceSampleRatio, accessLog, accessLogSampleRatio } = this.config.edge;

    const answer = (
      req: IncomingMessage,
      res: ServerResponse,
      site: SiteRef | undefined,
      requestId: string,
    ): number | Promise<number> => {
      const head = req.method === 'HEAD';
      // Previews are for people sent the link, never for search engines (merged into writeHead).
      if (site?.deployId !== undefined) res.setHeader('X-Robots-Tag', 'noindex');
      if (req.method !== 'GET' && !head) return sendFixed(res, 405, requestId, 'method', false);
      if (!site || site === NO_SUCH_PREVIEW) return sendFixed(res, 404, requestId, 'noSite', head);
      const url = target(req.url ?? '/');
      const query = url.indexOf('?');
      const urlPath = query < 0 ? url : url.slice(0, query);
      const resolved = cache.cachedResolution(site, urlPath);
      if (resolved) return respond(req, res, resolved, url, query, requestId, head);
      return cache.resolve(site, urlPath).then((r) => respond(req, res, r, url, query, requestId, head));
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

    const failed = (req: IncomingMessage, res: ServerResponse, requestId: string, err: unknown): number => {
      logger.error({ err, reqId: requestId }, 'edge request failed');
      if (!res.headersSent) return sendFixed(res, 503, requestId, 'unavailable', req.method === 'HEAD');
      res.destroy();
      return 503;
    };

    const serve = lifecycleHandler(
      {
        role,
        logger,
        route: 'edge',
        spans: { sampleRatio: traceSampleRatio },
        accessLog: { mode: accessLog, sampleRatio: accessLogSampleRatio },
        // Every answer writes X-Request-Id in its one writeHead (respond.ts).
        handlerWritesRequestId: true,
      },
      answer,
      failed,
    );

    return {
      cachedHost: (hostHeader) => cache.cachedHost(hostHeader),
      lookupHost: (hostHeader) => cache.lookupHost(hostHeader),
      serve,
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
