import type { IncomingHttpHeaders } from 'node:http';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { Counter, Histogram } from 'prom-client';
import { httpRequestDuration, httpRequestsTotal } from './metrics.js';
import { tracer } from './tracing.js';

// Helpers for paths that answer tens of thousands of requests a second per core (the edge):
// label children bound once, spans and log lines decided per request before anything is built.

interface Bound {
  count: Counter.Internal;
  duration: Histogram.Internal<string>;
}

/**
 * Records `hostplane_http_requests_total` and `…_duration_seconds` for one role and route, with
 * the label children bound once per (method, status): no label object is hashed per request.
 */
export function boundRequestMetrics(
  role: string,
  route: string,
): (method: string, status: number, seconds: number) => void {
  const children = new Map<string, Bound>();
  return (method, status, seconds) => {
    const key = method + status;
    let bound = children.get(key);
    if (!bound) {
      const labels = { role, method, route, status: String(status) };
      bound = { count: httpRequestsTotal.labels(labels), duration: httpRequestDuration.labels(labels) };
      children.set(key, bound);
    }
    bound.count.inc();
    bound.duration.observe(seconds);
  };
}

/** A server span for a request when it is traced, undefined when it is not (the common case). */
export interface SampledSpan {
  span: Span;
  /** The context with the span active (run work in it so child spans nest). */
  context: Context;
}

/**
 * Parent-based sampling decided before OpenTelemetry is touched: a request that carries a W3C
 * `traceparent` is traced when its parent was sampled; any other request with probability `ratio`.
 */
export function startSampledServerSpan(
  name: string,
  headers: IncomingHttpHeaders,
  ratio: number,
  attributes: Attributes,
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
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Runs `fn` with the sampled span active, or plainly when there is none. */
export function withSampledSpan<T>(sampled: SampledSpan | undefined, fn: () => T): T {
  return sampled ? context.with(sampled.context, fn) : fn();
}

/** Whether to write an access log line: none, a sampled share, or all. */
export function accessLogDecider(mode: 'off' | 'sampled' | 'all', ratio: number): () => boolean {
  if (mode === 'all') return () => true;
  if (mode === 'off' || ratio <= 0) return () => false;
  return () => Math.random() < ratio;
}
