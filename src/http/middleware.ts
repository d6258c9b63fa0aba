import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  httpRequestDuration,
  httpRequestsTotal,
  logRequestCompleted,
  requestIdOf,
  tracer,
  type Logger,
} from '../observability/index.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request id: X-Request-Id when sane, else generated; echoed in the response. */
    id: string;
  }
}

/**
 * One structured log line per request with its request id. Written by hand rather than with
 * pino-http: that builds a child logger per request even when the line is below the log level,
 * which cost the edge a third of its throughput (bench/edge). Only method, URL, host and user
 * agent are logged: never headers, so no credential can reach a log line.
 */
export function requestLogging(logger: Logger): RequestHandler {
  return (req, res, next) => {
    req.id = requestIdOf(req.headers);
    res.setHeader('X-Request-Id', req.id);
    const started = performance.now();
    res.on('finish', () =>
      logRequestCompleted(
        logger,
        { id: req.id, method: req.method, url: req.originalUrl, headers: req.headers },
        res.statusCode,
        performance.now() - started,
      ),
    );
    next();
  };
}

/** Request counts and durations by route pattern (never the raw URL, to bound label cardinality). */
export function requestMetrics(role: string): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const end = httpRequestDuration.startTimer();
    res.on('finish', () => {
      const route = res.locals.metricsRoute ?? (req.route?.path as string | undefined) ?? 'unmatched';
      const labels = { role, method: req.method, route, status: String(res.statusCode) };
      end(labels);
      httpRequestsTotal.inc(labels);
    });
    next();
  };
}

/** One server span per request, active for everything the request does (db and blob spans nest in it). */
export function requestTracing(): RequestHandler {
  return (req, res, next) => {
    const span = tracer.startSpan(`HTTP ${req.method}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': req.method, 'url.path': req.path },
    });
    res.on('finish', () => {
      const route = res.locals.metricsRoute ?? (req.route?.path as string | undefined);
      if (route) span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(context.active(), span), next);
  };
}
