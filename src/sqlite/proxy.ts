import http from 'node:http';
import https from 'node:https';
import { timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { AppError, outageError } from '../errors/index.js';
import type { Logger } from '../observability/index.js';
import type { Shards } from './shards.js';
import type { TokenGrants } from './grants.js';
import { proxyHops } from './metrics.js';

/** Marks a call forwarded by another replica; its value is the shared shard secret. */
export const SHARD_SECRET_HEADER = 'x-hostplane-shard-secret';

/** The CRUD calls that need the database file, so only its owner can answer them. */
const OWNER_PATHS = new Set(['/query', '/exec', '/batch', '/version', '/schema', '/vacuum']);
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
]);

/** The client went away before its answer was whole: not the owner's failure. */
class ClientClosed extends Error {
  constructor() {
    super('the client closed the connection before its answer was whole');
  }
}

/** The hop to the owning shard failed (not this replica's dependencies). */
class HopFailed extends Error {
  constructor(cause: unknown) {
    super('the hop to the owning shard failed', { cause });
  }
}

const unavailable = () =>
  new AppError('CAPACITY', {
    message: 'The shard that holds this database is not reachable right now; try again shortly.',
    retryAfterSeconds: 5,
  });

/**
 * Sends a CRUD call to the shard that owns its database: served here when this process is the
 * owner, else forwarded over the owner's internal URL with the shared secret (every replica has
 * it from PostgreSQL). A forwarded call is never forwarded again. Token, Origin and session are
 * checked by the owner, as for any call (the token resolution here is the same cached one).
 */
export function routeToOwner(deps: {
  grants: TokenGrants;
  shards: Shards;
  secret: () => Promise<Buffer>;
  logger: Logger;
}): RequestHandler {
  const { grants, shards } = deps;
  return (req, res, next) => {
    if (!req.path.startsWith('/api/v1/sqlite/') || req.method === 'OPTIONS') return next();
    if (!OWNER_PATHS.has(req.path.slice('/api/v1/sqlite'.length))) return next();
    const token = req.get('x-sqlite-token');
    if (!token) return next();
    (async () => {
      const grant = await grants.resolve(token).catch(() => undefined);
      if (!grant) return next(); // answered 401 by the token check
      const { database } = grant;
      const owner = await shards.placementOf(database.id, database.shard);
      if (!owner) throw unavailable();
      // Placement never moves, so the grant in memory may keep it (no placement read next time).
      database.shard ??= owner;
      const secret = await deps.secret();
      const forwarded = req.get(SHARD_SECRET_HEADER);
      if (forwarded !== undefined && !sameSecret(forwarded, secret))
        throw new AppError('SQLITE_FORBIDDEN', { message: 'Invalid shard credential.' });
      if (owner === shards.self.name) return next();
      if (forwarded !== undefined) throw unavailable(); // placed elsewhere meanwhile: no second hop
      const target = await shards.live(owner);
      if (!target) throw unavailable();
      const result = await forward(req, res, new URL(req.originalUrl, target.url), secret).catch(
        (err: unknown) => {
          throw err instanceof ClientClosed ? err : new HopFailed(err);
        },
      );
      proxyHops.inc({ result });
    })().catch((err: unknown) => {
      if (err instanceof ClientClosed) {
        proxyHops.inc({ result: 'client_closed' });
        return void deps.logger.debug('sqlite proxy hop cut: the client closed the connection');
      }
      // The database away while looking up the owner: the same 503 as every other route answers.
      const outage = err instanceof HopFailed ? undefined : outageError(err);
      if (outage) return next(outage);
      if (!(err instanceof AppError)) {
        proxyHops.inc({ result: 'error' });
        deps.logger.warn({ err }, 'sqlite proxy hop failed');
        if (res.headersSent) return void res.destroy();
        return next(unavailable());
      }
      next(err);
    });
  };
}

/** Whether a presented shard credential is the shared secret (timing-safe). */
export function sameSecret(presented: string, secret: Buffer): boolean {
  const a = Buffer.from(presented, 'base64url');
  return a.length === secret.length && timingSafeEqual(a, secret);
}

/** Streams the request to `url` and the answer back (status, headers, body). */
function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
  secret: Buffer,
): Promise<'ok' | 'answered_here'> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
    headers[SHARD_SECRET_HEADER] = secret.toString('base64url');
    const send = url.protocol === 'https:' ? https.request : http.request;
    let [answered, carried] = [false, false];
    const upstream = send(url, { method: req.method, headers, timeout: 30_000 }, (answer) => {
      answered = true;
      // Answered here already (the body deadline's 408): the owner's answer has nowhere to go.
      if (res.headersSent) {
        answer.resume();
        return resolve('answered_here');
      }
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers))
        if (!HOP_BY_HOP.has(name)) out[name] = value;
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
      answer.on('end', () => {
        carried = true;
        resolve('ok');
      });
      answer.on('error', reject);
    });
    upstream.on('timeout', () => upstream.destroy(new Error('shard did not answer in time')));
    upstream.on('error', reject);
    // The client gone before its answer was whole (before the owner answered or while the answer
    // streams back): cut the hop at once, so the owner's connection is not held by a paused answer.
    const clientClosed = () => {
      reject(new ClientClosed()); // settles first: the hang-up that follows is not the owner's failure
      upstream.destroy();
    };
    if (res.destroyed || req.socket.destroyed) return clientClosed();
    res.once('close', () => {
      if (carried) return;
      if (!res.writableFinished) return clientClosed();
      if (answered) return;
      resolve('answered_here'); // e.g. the body deadline's 408: the owner's answer has nowhere to go
      upstream.destroy();
    });
    req.pipe(upstream);
  });
}
