import express, { type Express, type RequestHandler } from 'express';
import type { BlobStore } from '../blob/index.js';
import { errorHandler, notFoundHandler, requestLifecycle } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import type { Store } from '../store/index.js';
import type { AppRole } from './roles.js';

/**
 * Readiness: the api (and all) roles need the database and the blob store for every request,
 * so they are unready without them. The edge stays ready through a database or S3 blip: it
 * still serves what it has cached, and taking every edge pod out of its Service at once would
 * turn a blip into an outage. It reports itself degraded instead. A SQLite shard is unready
 * until its databases are restored and leased (its start-up work).
 */
export function readiness(
  store: Store,
  blobs: BlobStore,
  logger: Logger,
  role: AppRole,
  shardReady?: () => boolean,
): RequestHandler {
  return async (_req, res) => {
    // A shard is ready once the databases placed on it are restored, opened and leased.
    if (shardReady && !shardReady()) {
      res
        .status(503)
        .json({ status: 'starting', message: 'restoring and leasing this shard’s SQLite databases' });
      return;
    }
    try {
      await withDeadline(Promise.all([store.ping(), blobs.ping()]), 2_000);
      res.json({ status: 'ok' });
    } catch (err) {
      logger.warn({ err }, role === 'edge' ? 'degraded: serving from cache' : 'not ready');
      if (role === 'edge')
        res.json({ status: 'degraded', message: 'database or blob store unreachable; serving from cache' });
      else res.status(503).json({ status: 'unavailable', message: 'database or blob store unreachable' });
    }
  };
}

/** The controller role's HTTP surface: health, readiness and metrics only. */
export function createControllerApp(
  logger: Logger,
  isReady: () => Promise<boolean>,
  isHealthy: () => boolean,
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestLifecycle({ role: 'controller', logger, spans: 'off' }));
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
