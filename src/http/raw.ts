import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../errors/index.js';
import type { Logger } from '../observability/index.js';
import { errorResponse } from './errors.js';
import { jsonNestsDeeper, jsonTooDeepMessage } from './json-depth.js';
import { lifecycleHandler } from './lifecycle.js';

// Routes served straight from node:http, without Express, for calls that come thousands of times
// a second (the routes a domain declares `raw`, dispatched by raw-dispatch.ts): the same duties as the Express stack (the request lifecycle,
// registry error bodies, JSON body rules) at a fraction of its cost per call.

/**
 * Whether the body can be read by `readJsonBody`: no content coding and UTF-8 (or no charset).
 * Anything else goes the Express way, whose parser inflates or refuses it.
 */
export function plainJsonBody(req: IncomingMessage): boolean {
  const coding = req.headers['content-encoding'];
  if (coding !== undefined && coding.toLowerCase() !== 'identity') return false;
  const type = req.headers['content-type'];
  if (type === undefined) return true;
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type)?.[1];
  return charset === undefined || charset.toLowerCase() === 'utf-8';
}

/**
 * Reads a JSON body the way `jsonBody` (express.json, strict) does: at most `limitBytes`, UTF-8,
 * an object or array at the top, an empty body as `{}`; refusals are the same registry codes.
 */
export function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  let now: unknown;
  try {
    now = takeJsonBody(req, limitBytes);
  } catch (err) {
    return Promise.reject(err as Error);
  }
  return now === NOT_YET ? streamJsonBody(req, limitBytes) : Promise.resolve(now);
}

/** What takeJsonBody answers when the body has to be read from the stream. */
export const NOT_YET: unique symbol = Symbol('not yet');

/**
 * `readJsonBody` without a promise when it can be: the body parsed (refusals thrown) when it is
 * too large by its header or all here, unread; else NOT_YET (then readJsonBody).
 */
export function takeJsonBody(req: IncomingMessage, limitBytes: number): unknown {
  const declared = Number(req.headers['content-length']);
  if (declared > limitBytes) {
    req.resume();
    throw new AppError('PAYLOAD_TOO_LARGE');
  }
  // The body came whole with its headers (a small call) and nothing has read it: it is buffered
  // in the request, taken at once, without listeners and the stream's ticks to deliver it. Whole:
  // the request is complete, or all its declared bytes are buffered (the parser has pushed the
  // body but not yet said the message is complete: promise jobs run in between).
  const whole =
    req.complete || (declared === req.readableLength && req.headers['transfer-encoding'] === undefined);
  if (!whole || req.readableFlowing !== null || req.readableDidRead) return NOT_YET;
  const buf = (req.read() as Buffer | null) ?? Buffer.alloc(0);
  if (buf.length > limitBytes) throw new AppError('PAYLOAD_TOO_LARGE');
  return parseJsonBody(buf);
}

/** The body read from the stream as it arrives (see readJsonBody). */
function streamJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        req.removeAllListeners('data');
        req.resume();
        reject(new AppError('PAYLOAD_TOO_LARGE'));
      } else chunks.push(chunk);
    });
    // A client gone before the end (the request's only errors are its connection's): nothing will
    // come, and nobody waits for the answer; a 400 for the metrics, never a logged 500.
    const aborted = () => reject(new AppError('INVALID_REQUEST', { message: 'The request was aborted.' }));
    req.on('error', aborted);
    req.on('close', () => req.complete || aborted());
    req.on('end', () => {
      if (size > limitBytes) return;
      try {
        resolve(parseJsonBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
      } catch (err) {
        reject(err as Error);
      }
    });
  });
}

/** A whole body as JSON, by body-parser's rules (see readJsonBody); refusals thrown as AppError. */
function parseJsonBody(buf: Buffer): unknown {
  if (!isUtf8(buf))
    throw new AppError('INVALID_REQUEST', { message: 'The request body is not valid UTF-8.' });
  // As body-parser: a leading BOM is dropped, only an empty body is {}, and the first
  // character after JSON's own whitespace must open an object or an array.
  if (buf.length === 0) return {};
  const text = buf.toString('utf8').replace(/^\uFEFF/, '');
  if (jsonNestsDeeper(buf)) throw new AppError('INVALID_REQUEST', { message: jsonTooDeepMessage });
  const first = /^[ \t\n\r]*(.)/s.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw notJson();
  try {
    return JSON.parse(text);
  } catch {
    throw notJson();
  }
}

const notJson = () => new AppError('INVALID_REQUEST', { message: 'The request body is not valid JSON.' });

/**
 * A JSON answer serialized already (the SQLite worker writes a query's rows as JSON text): sent
 * as it is by `sendJson` (and by the SQLite routes on Express), where any other body is
 * serialized first.
 */
export class JsonText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** Answers a JSON body (headers set before on `res`, e.g. CORS, are kept). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = body instanceof JsonText ? body.text : JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** What a raw route's handler answers: the body of a 200, or undefined when it wrote the answer itself. */
export type RawAnswer = Promise<unknown>;

/**
 * A route served without Express: `serve(req, res, handle)` runs `handle` inside the request's
 * lifecycle (request id, span, metrics with this route, log line) and answers what it returns as
 * a 200 JSON body, a thrown error as its registry body.
 */
export function rawRoute(opts: { role: string; logger: Logger; route: string }) {
  const { logger } = opts;
  const answerJson = (
    _req: IncomingMessage,
    res: ServerResponse,
    handle: (requestId: string) => RawAnswer,
    requestId: string,
  ): Promise<number> =>
    handle(requestId).then((body) => {
      if (body !== undefined) sendJson(res, 200, body);
      // Written by the handler (e.g. streamed from the owning shard) but cut before its end: the
      // client went away, recorded as 499 (nginx's "client closed request"), not as its status.
      else if (!res.writableEnded) return 499;
      return res.statusCode;
    });
  // The handler's failure, or an answer that could not be written.
  const fail = (_req: IncomingMessage, res: ServerResponse, requestId: string, err: unknown): number => {
    try {
      if (res.headersSent) res.destroy();
      else {
        const answer = errorResponse(err, logger, requestId);
        for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
        sendJson(res, answer.status, answer.body);
      }
    } catch (unwritten) {
      logger.error({ err: unwritten, reqId: requestId }, 'answer not written');
      res.destroy();
    }
    return res.statusCode;
  };
  return lifecycleHandler({ ...opts, spans: 'all' }, answerJson, fail);
}
