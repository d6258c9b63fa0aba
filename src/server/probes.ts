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
 * turn a blip into an outage. It reports itself degraded instead. A SQLite shard (all, sqlite)
 * is ready once its start-up work is done (`shardReady`: registered, its databases restored and leased); the
 * `sqlite` role needs PostgreSQL for that (leases, placement), not the blob store.
 */
export function readiness(
  parts: { store: Store; blobs: BlobStore; shardReady?: () => boolean },
  logger: Logger,
  role: AppRole,
): RequestHandler {
  const { store, blobs, shardReady } = parts;
  const pings = (): Promise<unknown> =>
    role === 'sqlite' ? store.ping() : Promise.all([store.ping(), blobs.ping()]);
  const unreachable = role === 'sqlite' ? 'database unreachable' : 'database or blob store unreachable';
  return async (_req, res) => {
    try {
      await withDeadline(pings(), 2_000);
    } catch (err) {
      logger.warn({ err }, role === 'edge' ? 'degraded: serving from cache' : 'not ready');
      if (role === 'edge')
        res.json({ status: 'degraded', message: 'database or blob store unreachable; serving from cache' });
      else res.status(503).json({ status: 'unavailable', message: unreachable });
      return;
    }
    if (shardReady && !shardReady())
      res.status(503).json({ status: 'unavailable', message: 'SQLite shard still starting' });
    else res.json({ status: 'ok' });
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
