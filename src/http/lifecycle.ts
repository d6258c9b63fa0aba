import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { RequestHandler } from 'express';
import { boundRequestMetrics, tracer, tracingRegistered, type Logger } from '../observability/index.js';

// What every request goes through, whichever way it is served (Express, a raw fast-path route,
// the edge): a request id echoed as X-Request-Id, a server span, then on its answer the route's
// hostplane_http_* metrics, the span's status and end, and one "request completed" log line.
// Each way of serving binds its options once (per role, per route) and adapts below.

declare module 'express-serve-static-core' {
  interface Request {
    /** The request id: X-Request-Id when sane, else generated; echoed in the response. */
    id: string;
  }
}

export interface LifecycleOptions {
  role: string;
  logger: Logger;
  /** The route label of every request (a raw route, `edge`); absent: each request's Express route. */
  route?: string;
  /**
   * Server spans: for every request, for none, or for a sampled share (parent-based, see
   * startSampledServerSpan) on paths too hot to pay for a span each.
   */
  spans: 'all' | 'off' | { sampleRatio: number };
  /** The "request completed" line: every request (the default), or a share of them plus every 5xx. */
  accessLog?: { mode: 'off' | 'sampled' | 'all'; sampleRatio: number };
  /** Whether the handler writes X-Request-Id itself (the edge: in its one writeHead) instead of setHeader. */
  handlerWritesRequestId?: boolean;
}

/** A request's server span and the context it is active in (undefined: the request is not traced). */
export interface SampledSpan {
  span: Span;
  /** The context with the span active (run work in it so child spans nest). */
  context: Context;
}

/** The two ends of the lifecycle, bound to one role (and route when it is fixed). */
function bindLifecycle(options: LifecycleOptions) {
  const { role, logger, spans, route: fixedRoute } = options;
  const logThis = accessLogDecider(options.accessLog?.mode ?? 'all', options.accessLog?.sampleRatio ?? 1);
  const fixed = fixedRoute === undefined ? undefined : boundRequestMetrics(role, fixedRoute);
  const byRoute = new Map<string, ReturnType<typeof boundRequestMetrics>>();
  const recorderOf = (route: string) => {
    let record = byRoute.get(route);
    if (!record) byRoute.set(route, (record = boundRequestMetrics(role, route)));
    return record;
  };

  /** The request's span (`path`: its url.path attribute, by default the path of its target). */
  const startSpan = (req: IncomingMessage, path?: string): SampledSpan | undefined => {
    // No provider registered: the span would be a no-op, its context one more allocation.
    if (spans === 'off' || !tracingRegistered()) return undefined;
    const method = req.method ?? 'GET';
    const name = fixedRoute === undefined ? `HTTP ${method}` : `${method} ${fixedRoute}`;
    if (spans === 'all') {
      const span = tracer.startSpan(name, {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'url.path': path ?? pathOf(req.url) },
      });
      return { span, context: trace.setSpan(context.active(), span) };
    }
    return startSampledServerSpan(name, req.headers, spans.sampleRatio, () => ({
      'http.request.method': method,
      'url.path': path ?? pathOf(req.url),
    }));
  };

  /** Records the answered request (`route`: the Express route that answered it, if any). */
  const finish = (
    req: IncomingMessage,
    url: string | undefined,
    status: number,
    started: number,
    requestId: string,
    sampled: SampledSpan | undefined,
    route?: string,
  ): void => {
    const ms = performance.now() - started;
    const method = req.method ?? 'GET';
    (fixed ?? recorderOf(route ?? 'unmatched'))(method, status, ms / 1000);
    if (sampled) {
      const { span } = sampled;
      if (fixedRoute === undefined && route !== undefined) span.updateName(`${method} ${route}`);
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    if (status >= 500 || logThis()) logRequestCompleted(logger, req, url, requestId, status, ms);
  };

  return { startSpan, finish };
}

/** The lifecycle as Express middleware (mounted first): the route label is the route that answered. */
export function requestLifecycle(options: Omit<LifecycleOptions, 'route'>): RequestHandler {
  const { startSpan, finish } = bindLifecycle(options);
  return (req, res, next) => {
    const started = performance.now();
    req.id = requestIdOf(req.headers);
    res.setHeader('X-Request-Id', req.id);
    const sampled = startSpan(req, req.path);
    res.on('finish', () => {
      const route =
        (res.locals.metricsRoute as string | undefined) ?? (req.route?.path as string | undefined);
      finish(req, req.originalUrl, res.statusCode, started, req.id, sampled, route);
    });
    if (sampled) context.with(sampled.context, next);
    else next();
  };
}

/**
 * Answers one request (`status`: the status it was answered with, or its promise); run inside
 * the request's span. `arg` is what the caller passes per request (a site, a handler).
 */
export type LifecycleHandle<A> = (
  req: IncomingMessage,
  res: ServerResponse,
  arg: A,
  requestId: string,
) => number | Promise<number>;

/** Answers a request whose handle threw or rejected; returns the status it was answered with. */
export type LifecycleFailure = (
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  err: unknown,
) => number;

/**
 * The lifecycle around a request served straight from node:http (a raw route, the edge):
 * `handle` and `fail` are bound once, so a request costs no closure beyond its span's and its
 * promise's. `started` may be given when the request's time began before (e.g. an auth lookup).
 */
export function lifecycleHandler<A>(
  options: LifecycleOptions & { route: string },
  handle: LifecycleHandle<A>,
  fail: LifecycleFailure,
): (req: IncomingMessage, res: ServerResponse, arg: A, started?: number) => void {
  const { startSpan, finish } = bindLifecycle(options);
  const setId = options.handlerWritesRequestId !== true;
  return (req, res, arg, started = performance.now()) => {
    const requestId = requestIdOf(req.headers);
    if (setId) res.setHeader('X-Request-Id', requestId);
    const sampled = startSpan(req);
    let status: number | Promise<number>;
    try {
      status = sampled
        ? context.with(sampled.context, handle, undefined, req, res, arg, requestId)
        : handle(req, res, arg, requestId);
    } catch (err) {
      status = fail(req, res, requestId, err);
    }
    if (typeof status === 'number') finish(req, req.url, status, started, requestId, sampled);
    else
      status.then(
        (s) => finish(req, req.url, s, started, requestId, sampled),
        (err: unknown) => finish(req, req.url, fail(req, res, requestId, err), started, requestId, sampled),
      );
  };
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** A request's id: its X-Request-Id when sane, else a new one (echoed by every way of serving). */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const incoming = headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/**
 * Parent-based sampling decided before OpenTelemetry is touched: a request that carries a W3C
 * `traceparent` is traced when its parent was sampled; any other request with probability `ratio`.
 */
export function startSampledServerSpan(
  name: string,
  headers: IncomingHttpHeaders,
  ratio: number,
  /** Built only for a request that is traced. */
  attributes: () => Attributes,
): SampledSpan | undefined {
  const traceparent = headers.traceparent;
  let parent: Context = ROOT_CONTEXT;
  if (typeof traceparent === 'string') {
    // Flags are the last two hex digits; their lowest bit says the parent was sampled.
    if ((parseInt(traceparent.slice(-1), 16) & 1) !== 1) return undefined;
    parent = propagation.extract(ROOT_CONTEXT, headers);
  } else if (ratio <= 0 || (ratio < 1 && Math.random() >= ratio)) {
    return undefined;
  }
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes: attributes() }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Whether to write an access log line: none, a sampled share, or all. */
export function accessLogDecider(mode: 'off' | 'sampled' | 'all', ratio: number): () => boolean {
  if (mode === 'all') return () => true;
  if (mode === 'off' || ratio <= 0) return () => false;
  return () => Math.random() < ratio;
}

/** The path of a request target, without its query. */
const pathOf = (url: string | undefined): string => {
  if (url === undefined) return '';
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
};

/**
 * The one "request completed" line, at error for 5xx, warn for 4xx, else info. Written by hand
 * rather than with pino-http, which builds a child logger per request even below the log level
 * (a third of the edge's throughput, bench/edge). Never headers beyond host and user agent, so
 * no credential reaches a log line.
 */
function logRequestCompleted(
  logger: Logger,
  req: IncomingMessage,
  url: string | undefined,
  id: string,
  status: number,
  ms: number,
): void {
  const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
  if (!logger.isLevelEnabled(level)) return;
  logger[level](
    {
      req: { id, method: req.method, url, host: req.headers.host, userAgent: req.headers['user-agent'] },
      res: { statusCode: status },
      responseTime: Math.round(ms),
    },
    'request completed',
  );
}
