import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AppError } from '../errors/index.js';
import {
  boundRequestMetrics,
  logRequestCompleted,
  requestIdOf,
  tracer,
  type Logger,
} from '../observability/index.js';
import { errorResponse } from './errors.js';
import { jsonNestsDeeper, jsonTooDeepMessage } from './json-depth.js';

// Routes served straight from node:http, without Express, for calls that come thousands of times
// a second (a domain's `fastPath`): the same duties as the Express stack (request id, metrics,
// span, log line, registry error bodies, JSON body rules) at a fraction of its cost per call.

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
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (declared > limitBytes) {
      req.resume();
      return reject(new AppError('PAYLOAD_TOO_LARGE'));
    }
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
      const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (!isUtf8(buf))
        return reject(new AppError('INVALID_REQUEST', { message: 'The request body is not valid UTF-8.' }));
      // As body-parser: a leading BOM is dropped, only an empty body is {}, and the first
      // character after JSON's own whitespace must open an object or an array.
      const text = buf.toString('utf8').replace(/^\uFEFF/, '');
      if (buf.length === 0) return resolve({});
      if (jsonNestsDeeper(buf))
        return reject(new AppError('INVALID_REQUEST', { message: jsonTooDeepMessage }));
      const first = /^[ \t\n\r]*(.)/s.exec(text)?.[1];
      if (first !== '{' && first !== '[') return reject(notJson());
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(notJson());
      }
    });
  });
}

const notJson = () => new AppError('INVALID_REQUEST', { message: 'The request body is not valid JSON.' });

/** Answers a JSON body (headers set before on `res`, e.g. CORS, are kept). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * A route served without Express: `serve(req, res, handle)` runs `handle` inside the request's
 * span and answers what it returns as JSON (a thrown error as its registry body), then records
 * the request like the Express middleware does (hostplane_http_* with this route, log line).
 */
export function rawRoute(opts: { role: string; logger: Logger; route: string }) {
  const { logger, route } = opts;
  const record = boundRequestMetrics(opts.role, route);
  return (
    req: IncomingMessage,
    res: ServerResponse,
    /** The answer, or undefined when `handle` wrote it itself (e.g. streamed from elsewhere). */
    handle: (requestId: string) => Promise<{ status: number; body: unknown } | undefined>,
    started = performance.now(),
  ): void => {
    const method = req.method ?? 'GET';
    const requestId = requestIdOf(req.headers);
    res.setHeader('X-Request-Id', requestId);
    const span = tracer.startSpan(`${method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': method, 'url.path': route },
    });
    const finish = () => {
      const status = res.statusCode;
      const ms = performance.now() - started;
      record(method, status, ms / 1000);
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      logRequestCompleted(logger, { id: requestId, method, url: req.url, headers: req.headers }, status, ms);
    };
    const fail = (err: unknown) => {
      if (res.headersSent) return void res.destroy();
      const answer = errorResponse(err, logger, requestId);
      for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
      sendJson(res, answer.status, answer.body);
    };
    context
      .with(trace.setSpan(context.active(), span), () => handle(requestId))
      .then((answer) => answer && sendJson(res, answer.status, answer.body))
      .catch(fail) // the handler's failure, or an answer that could not be written
      .catch((err: unknown) => {
        logger.error({ err, reqId: requestId }, 'answer not written');
        res.destroy();
      })
      .finally(finish);
  };
}
