import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { httpRequestDuration, httpRequestsTotal, tracer, type Logger } from '../observability/index.js';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

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
    const incoming = req.headers['x-request-id'];
    req.id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    const started = performance.now();
    res.on('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          req: {
            id: req.id,
            method: req.method,
            url: req.originalUrl,
            host: req.headers.host,
            userAgent: req.headers['user-agent'],
          },
          res: { statusCode: res.statusCode },
          responseTime: Math.round(performance.now() - started),
        },
        'request completed',
      );
    });
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
