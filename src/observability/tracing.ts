import { ProxyTracerProvider, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';

export const tracer = trace.getTracer('hostplane');

/** What the global provider delegates to while none is registered. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * Whether a tracer provider is registered (startTracing, or a test's): without one every span is
 * a no-op, so a hot path need not start one nor enter a context for it (a few per cent of a
 * SQLite point read's main thread).
 */
export function tracingRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

/** Runs `fn` inside an active span; records failures on the span and rethrows. */
export async function withSpan<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * `withSpan` when the active span records (a traced request), else `fn` alone: under the SDK's
 * parent-based sampling a child of a span that does not record is not recorded either, so the
 * span would cost a context switch and a closure per call for nothing (the SQLite fast path).
 */
export function withSpanWhenTraced<T>(
  name: string,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  // No provider registered: no span records (and looking up the active one costs a context read).
  return tracingRegistered() && trace.getActiveSpan()?.isRecording() === true
    ? withSpan(name, attributes, fn)
    : fn();
}
