import type { Readable } from 'node:stream';

// As CommonJS modules: an ESM import of node:http reads every export of it, WebSocket and
// MessageEvent among them, whose getters load undici, the very cost this module avoids.
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

/*
 * One HTTP exchange of the deploy commands, over node:http(s) and their global agents (keep-alive,
 * and the environment's proxy when NODE_USE_ENV_PROXY asks for it). Not fetch: its implementation
 * (undici) is compiled on first use, which cost a cold CLI process 40-100 ms before its first
 * request left, a fifth of a small site's whole deploy (issue 29).
 */

export interface Exchange {
  method: string;
  headers: Record<string, string>;
  /** The body: bytes, or a fresh stream per attempt (its length is in the headers). */
  body?: Uint8Array | (() => Readable);
  /** The whole exchange is cut after this long (an `ETIMEDOUT` error). */
  timeoutMs?: number;
  /**
   * The exchange fails (IdleTimeout) once no byte has been sent or received for this long, from
   * the connection on: a server or proxy that accepts and never answers, or a reused keep-alive
   * socket dropped on the way, does not hang the command. Not a deadline: a large upload that keeps
   * moving is never cut, a single large write included (node's socket timer is held off while the
   * write's queue shrinks: net.Socket#_onTimeout). Sent means handed to the operating system: the
   * bytes its buffers still hold after the last write are not seen, so the wait for the answer
   * counts from then (TCP sizes those buffers to the path: they drain in a few round trips unless
   * the server reads slower than the network).
   */
  idleMs: number;
}

/** No byte either way for `idleMs` (the request has been abandoned; the server may have acted on it). */
export class IdleTimeout extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(readonly idleMs: number) {
    super(`ETIMEDOUT: nothing sent or received for ${idleMs / 1000} s`);
  }
}

/** Errors of exchanges that failed before their connection was open: no byte of them reached a server. */
const unsent = new WeakSet<object>();

/**
 * Whether the exchange failed before its connection was open (refused, unreachable, a name not
 * resolved, a connect or TLS handshake cut): the server cannot have acted on it, so even a request
 * that must not be repeated may be sent again. A reused keep-alive socket was open already.
 */
export function neverSent(err: unknown): boolean {
  return typeof err === 'object' && err !== null && unsent.has(err);
}

export interface Answered {
  status: number;
  /** The value of a header (the first, when repeated), or null. */
  header(name: string): string | null;
  text: string;
}

/** Sends one request and reads the whole answer; rejects with the network's error (its `code`). */
export function exchange(url: URL, sent: Exchange): Promise<Answered> {
  return new Promise((resolve, reject) => {
    const lib = url.protocol === 'https:' ? https : http;
    let answered = false;
    let open = false;
    let timer: NodeJS.Timeout | undefined;
    const fail = (err: Error) => {
      clearTimeout(timer);
      if (!open) unsent.add(err);
      reject(err);
    };
    const req = lib.request(url, { method: sent.method, headers: sent.headers }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      const done = (text: string) => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          header: (name) => {
            const value = res.headers[name.toLowerCase()];
            return (Array.isArray(value) ? value[0] : value) ?? null;
          },
          text,
        });
      };
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      // An answer cut short is answered all the same, without its body (the caller says what it lacks).
      res.on('error', () => done(''));
      res.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
      res.on('close', () => done(''));
    });
    // Open once connected (a TLS socket: once its handshake is done, before which nothing of the
    // request is written); a reused keep-alive socket is open already.
    req.on('socket', (socket) => {
      if (!socket.connecting) open = true;
      else socket.once('encrypted' in socket ? 'secureConnect' : 'connect', () => (open = true));
    });
    // A server may answer (a 429, a 413) before it has read the body: the answer counts, and the
    // write's own failure after it (EPIPE, ECONNRESET) is not the outcome.
    req.on('error', (err) => {
      if (!answered) fail(err);
    });
    // The socket's own inactivity timer: reads and writes both reset it, connecting included.
    req.setTimeout(sent.idleMs, () => {
      const err = new IdleTimeout(sent.idleMs);
      // Also while the answer's body is read: a body cut short by it is the timeout, not an answer.
      fail(err);
      req.destroy(err);
    });
    if (sent.timeoutMs !== undefined)
      timer = setTimeout(
        () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })),
        sent.timeoutMs,
      );
    const body = sent.body;
    if (body === undefined || body instanceof Uint8Array) {
      req.end(body);
      return;
    }
    const stream = body();
    stream.on('error', (err) => req.destroy(err));
    req.on('close', () => stream.destroy());
    stream.pipe(req);
  });
}
