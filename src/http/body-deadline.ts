import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { AppError } from '../errors/index.js';
import { bodiesWatched, bodyTimeoutsTotal, type Logger } from '../observability/index.js';
import { errorResponse } from './errors.js';

/*
 * A request body that is not arriving must not hold what its request holds (its share of the upload budget, a
 * socket, a parser's buffer). Every body reader of the process (express.json and urlencoded, the
 * upload and fast-path readers, busboy, the SQLite proxy's pipe) is covered by one watchdog here,
 * around the whole request listener, so a reader added later is covered too.
 *
 * The rule, after nginx's client_body_timeout and Apache's mod_reqtimeout MinRate: time counts
 * only while the server is waiting for the body (a reader is consuming and nothing is buffered);
 * while the server itself is slow (a paused pipe: the blob store is behind) or has not started
 * reading (authentication), the client is not to blame. In every window of that waiting time the
 * body must bring `minBytesPerSecond` × window bytes, and at least one. The first window is the
 * grace period. A body that fails is answered 408 with the registry's body when no answer has
 * started, and its connection is closed (the rest of the body is never read), which frees at once
 * what the request held.
 */

export interface BodyDeadlineLimits {
  /** The window (ms of waiting) over which the rate is measured: also the longest silence. */
  windowMs: number;
  /** Bytes a second the body must average over each window (0: at least one byte a window). */
  minBytesPerSecond: number;
}

type Reason = 'stalled' | 'slow';

/** A route's own wording of the 408 (the publish endpoints answer `{success: false, …}`). */
type Answer = (message: string) => unknown;
const answers = new WeakMap<IncomingMessage, Answer>();

/** Lets a route whose errors have their own shape give the body of its 408. */
export function answerBodyTimeoutWith(req: IncomingMessage, answer: Answer): void {
  answers.set(req, answer);
}

interface Watched {
  req: IncomingMessage;
  res: ServerResponse;
  socket: Socket;
  lastTick: number;
  lastBytes: number;
  /** Bytes that came while the server was not waiting: counted in the next sample. */
  pending: number;
  samples: Array<{ ms: number; bytes: number }>;
  windowMs: number;
  windowBytes: number;
}

/** Whether the server is waiting for the client: a reader consumes, and nothing is left unread. */
const waitingForClient = (req: IncomingMessage) =>
  !req.complete &&
  req.readableLength === 0 &&
  (req.readableFlowing === true || req.listenerCount('readable') > 0);

const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined ||
  (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/** `listener` with every request body held to the limits (see above). */
export function guardBodies(
  listener: RequestListener,
  limits: BodyDeadlineLimits,
  logger: Logger,
): RequestListener {
  const windowSeconds = limits.windowMs / 1000;
  const needed = Math.max(1, Math.ceil(limits.minBytesPerSecond * windowSeconds));
  // Fine enough to end a slow body within an eighth of a window of its deadline, at most once a second.
  const tickMs = Math.min(1000, Math.max(50, limits.windowMs / 8));
  const watched = new Set<Watched>();
  let timer: NodeJS.Timeout | undefined;

  const unwatch = (w: Watched) => {
    if (watched.delete(w)) bodiesWatched.remove();
  };

  const abort = (w: Watched, reason: Reason) => {
    unwatch(w);
    bodyTimeoutsTotal.inc({ reason });
    const { req, res } = w;
    const message =
      reason === 'stalled'
        ? `No part of the request body arrived for ${windowSeconds} s.`
        : `The request body arrived slower than ${limits.minBytesPerSecond} bytes a second over ${windowSeconds} s.`;
    const reqId = res.getHeader('x-request-id');
    logger.warn(
      { reqId, method: req.method, path: req.url?.split('?')[0], reason, windowBytes: w.windowBytes },
      'request body too slow: answered 408, connection closed',
    );
    // Once the request's answer is out, Node no longer tells its readers that the connection is
    // gone: destroying the request does (they settle as aborted instead of waiting forever).
    const settleReaders = () => req.complete || req.destroy();
    if (res.headersSent || res.writableEnded) {
      settleReaders();
      return void w.socket.destroy();
    }
    res.once('close', settleReaders);
    const answer = errorResponse(
      new AppError('REQUEST_TIMEOUT', { message }),
      logger,
      typeof reqId === 'string' ? reqId : undefined,
    );
    const own = answers.get(req);
    const text = JSON.stringify(own ? own(message) : answer.body);
    // Connection: close makes Node end the socket once the answer is out; the readers then see
    // the request aborted (settleReaders), and answer nothing more (their answer is already sent).
    res.writeHead(408, {
      ...answer.headers,
      Connection: 'close',
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
    });
    res.end(text);
  };

  const tick = () => {
    const now = performance.now();
    for (const w of watched) {
      if (w.req.complete || w.socket.destroyed) {
        unwatch(w);
        continue;
      }
      const ms = now - w.lastTick;
      w.lastTick = now;
      const bytes = w.socket.bytesRead;
      w.pending += bytes - w.lastBytes;
      w.lastBytes = bytes;
      if (!waitingForClient(w.req)) continue;
      w.samples.push({ ms, bytes: w.pending });
      w.windowMs += ms;
      w.windowBytes += w.pending;
      w.pending = 0;
      // Keep the newest samples that still fill one window.
      while (w.samples.length > 1 && w.windowMs - w.samples[0]!.ms >= limits.windowMs) {
        const old = w.samples.shift()!;
        w.windowMs -= old.ms;
        w.windowBytes -= old.bytes;
      }
      if (w.windowMs >= limits.windowMs && w.windowBytes < needed) {
        try {
          abort(w, w.windowBytes === 0 ? 'stalled' : 'slow');
        } catch (err) {
          // A timer callback that throws ends the process: an answer that cannot be written only cuts the connection.
          logger.error({ err }, 'body deadline answer not written');
          w.socket.destroy();
        }
      }
    }
    if (watched.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  const watch = (req: IncomingMessage, res: ServerResponse) => {
    // The body came whole with its headers (a small call): nothing to wait for, nothing to watch.
    if (req.complete || req.destroyed) return;
    const socket = req.socket;
    const w: Watched = {
      req,
      res,
      socket,
      lastTick: performance.now(),
      lastBytes: socket.bytesRead,
      pending: 0,
      samples: [],
      windowMs: 0,
      windowBytes: 0,
    };
    watched.add(w);
    bodiesWatched.add();
    // Let go as soon as the body has arrived, not at the next round (up to a second later): held
    // that long, every request outlived the young generation under load and was promoted, which
    // made the old space grow by megabytes a second and GC a quarter of the main thread
    // (bench/sqlite). A body never read to its end goes at the round (complete or destroyed).
    req.once('end', () => unwatch(w));
    if (!timer) {
      timer = setInterval(tick, tickMs);
      timer.unref();
    }
  };

  // Requests with a body that arrived in this turn of the event loop, looked at once its poll is
  // over (the check phase): by then the bytes that came with their headers are parsed, and a body
  // that came whole with them (a small call) needs no watch. The parser's callbacks run promise
  // jobs in between, so a microtask would be too early.
  let arrived: Array<IncomingMessage | ServerResponse> = []; // request, its response, …
  const watchArrived = () => {
    const batch = arrived;
    arrived = [];
    for (let i = 0; i < batch.length; i += 2)
      watch(batch[i] as IncomingMessage, batch[i + 1] as ServerResponse);
  };

  return (req, res) => {
    if (hasBody(req) && arrived.push(req, res) === 2) setImmediate(watchArrived);
    listener(req, res);
  };
}
