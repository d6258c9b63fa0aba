import http from 'node:http';
import https from 'node:https';
import { timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { AppError, outageError } from '../errors/index.js';
import type { Logger } from '../observability/index.js';
import { grantOf } from './access.js';
import type { Shards } from './shards.js';
import type { Grant } from './grants.js';
import type { SessionCache } from './sessions.js';
import { proxyHops } from './metrics.js';

/** Marks a call forwarded by another replica; its value is the shared shard secret. */
export const SHARD_SECRET_HEADER = 'x-hostplane-shard-secret';
/** On a forwarded call: the forwarding replica changed the database's pool lately (see SessionCache). */
export const SESSIONS_CHANGED_HEADER = 'x-hostplane-sessions-changed';

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

/** Where the admitted calls of a database go: served here by its owner, or forwarded to it. */
export interface ShardProxy {
  /**
   * Sends the call on to the shard that owns its database and streams the answer back (true),
   * or leaves it to this process when it is the owner (false, at once when the grant knows it).
   */
  sendOn(req: http.IncomingMessage, res: http.ServerResponse, grant: Grant): false | Promise<boolean>;
  /** The same as Express middleware of a route, after its `scopedToken`. */
  toOwner: RequestHandler;
  /**
   * For a master-key route that names its database in a body it has read already (point-in-time
   * restore): sends the call with `body` (JSON) to the owner of `database`; false when served here.
   */
  sendTo(
    req: Request,
    res: http.ServerResponse,
    database: { id: number; shard: string | null },
    body?: unknown,
  ): Promise<boolean>;
}

/**
 * Sends a call that needs the database file to the shard that owns it: served here when this
 * process is the owner, else forwarded over the owner's internal URL with the shared secret (every
 * replica has it from PostgreSQL). A forwarded call is never forwarded again. The call is admitted
 * (token and Origin) before it comes here; the owner admits it again, and checks the session.
 */
export function shardProxy(deps: {
  shards: Shards;
  secret: () => Promise<Buffer>;
  sessions: Pick<SessionCache, 'changedHereLately'>;
  logger: Logger;
}): ShardProxy {
  const { shards } = deps;
  const route = async (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    database: { id: number; shard: string | null },
    path: string,
    body?: Buffer,
  ) => {
    const owner = await shards.placementOf(database.id, database.shard);
    if (!owner) throw unavailable();
    // Placement moves only by a drain, which NOTIFY announces and which drops the grants that
    // carry it: the grant in memory may keep it (no placement read next time).
    database.shard ??= owner;
    const secret = await deps.secret();
    const forwarded = req.headers[SHARD_SECRET_HEADER];
    if (forwarded !== undefined && !(typeof forwarded === 'string' && sameSecret(forwarded, secret)))
      throw new AppError('SQLITE_FORBIDDEN', { message: 'Invalid shard credential.' });
    if (owner === shards.self.name) return false;
    if (forwarded !== undefined) throw unavailable(); // placed elsewhere meanwhile: no second hop
    const target = await shards.live(owner);
    if (!target) throw unavailable();
    const sessionsChanged = deps.sessions.changedHereLately(database.id);
    // A restore downloads the replica before it answers: minutes for a large database.
    const idleMs = body === undefined ? undefined : RESTORE_HOP_IDLE_MS;
    const hop = { url: new URL(path, target.url), secret, sessionsChanged, body, idleMs };
    const result = await forward(req, res, hop).catch((err: unknown) => {
      throw err instanceof ClientClosed ? err : new HopFailed(err);
    });
    proxyHops.inc({ result });
    return true;
  };
  const settled = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    database: { id: number; shard: string | null },
    path: string,
    body?: Buffer,
  ) =>
    route(req, res, database, path, body).catch((err: unknown) => {
      if (err instanceof ClientClosed) {
        proxyHops.inc({ result: 'client_closed' });
        deps.logger.debug('sqlite proxy hop cut: the client closed the connection');
        return true;
      }
      // The database away while looking up the owner: the same 503 as every other route answers.
      const outage = err instanceof HopFailed ? undefined : outageError(err);
      if (outage) throw outage;
      if (!(err instanceof AppError)) {
        proxyHops.inc({ result: 'error' });
        deps.logger.warn({ err }, 'sqlite proxy hop failed');
        if (!res.headersSent) throw unavailable();
        res.destroy();
        return true;
      }
      throw err;
    });
  /** `path`: the request's target as it came (Express may have rewritten `req.url`). */
  const sendOn = (req: http.IncomingMessage, res: http.ServerResponse, grant: Grant, path: string) =>
    grant.database.shard === shards.self.name && req.headers[SHARD_SECRET_HEADER] === undefined
      ? false
      : settled(req, res, grant.database, path);
  return {
    sendOn: (req, res, grant) => sendOn(req, res, grant, req.url ?? '/'),
    toOwner: (req, res, next) => {
      const sent = sendOn(req, res, grantOf(req), req.originalUrl);
      if (sent === false) return next();
      sent.then((done) => {
        if (!done) next();
      }, next);
    },
    sendTo: async (req, res, database, body) =>
      settled(
        req,
        res,
        database,
        req.originalUrl,
        body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
      ),
  };
}

const RESTORE_HOP_IDLE_MS = 30 * 60_000;

/** Whether a presented shard credential is the shared secret (timing-safe). */
function sameSecret(presented: string, secret: Buffer): boolean {
  const a = Buffer.from(presented, 'base64url');
  return a.length === secret.length && timingSafeEqual(a, secret);
}

/** Streams the request to `url` and the answer back (status, headers, body). */
function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  hop: { url: URL; secret: Buffer; sessionsChanged: boolean; body?: Buffer; idleMs?: number },
): Promise<'ok' | 'answered_here'> {
  const { url } = hop;
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
    headers[SHARD_SECRET_HEADER] = hop.secret.toString('base64url');
    if (hop.sessionsChanged) headers[SESSIONS_CHANGED_HEADER] = '1';
    else delete headers[SESSIONS_CHANGED_HEADER];
    if (hop.body) {
      // Read here already (and decoded): sent on as the JSON it was parsed into.
      delete headers['content-encoding'];
      headers['content-type'] = 'application/json';
      headers['content-length'] = hop.body.length;
    }
    const send = url.protocol === 'https:' ? https.request : http.request;
    let [answered, carried] = [false, false];
    const upstream = send(url, { method: req.method, headers, timeout: hop.idleMs ?? 30_000 }, (answer) => {
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
    if (hop.body) upstream.end(hop.body);
    else req.pipe(upstream);
  });
}
