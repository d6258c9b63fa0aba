// Metrics, logs and traces shared by every domain. (OpenTelemetry start-up lives in otel.ts and is
// imported by the entry point only, so the SDK stays out of other modules' load path.)
export * from './logger.js';
export * from './metrics.js';
export * from './timing.js';
export * from './tracing.js';
export * from './metrics-server.js';
export * from './hot-path.js';
