import { parseArgs } from 'node:util';
import { siteUrl, type Config } from '../config/index.js';
import { createLogger } from '../observability/index.js';
import { ROLES, startController, startServer, type Role } from '../server/index.js';
import { usageError } from './errors.js';

export function parseServeArgs(args: string[]): Role {
  let role: string;
  try {
    ({
      values: { role },
    } = parseArgs({ args, options: { role: { type: 'string', default: 'all' } }, strict: true }));
  } catch (err) {
    throw usageError((err as Error).message, 'serve');
  }
  if (!(ROLES as readonly string[]).includes(role)) {
    throw usageError(`unknown role "${role}" (one of ${ROLES.join(', ')})`, 'serve');
  }
  return role as Role;
}

/** `hostplane serve`: runs until SIGINT or SIGTERM, then drains and exits 0. */
export async function serve(config: Config, role: Role): Promise<number> {
  // The OpenTelemetry SDK costs ~100 ms to load; only load it when spans are exported.
  const stopTracing = process.env.OTEL_EXPORTER_OTLP_ENDPOINT
    ? (await import('../observability/otel.js')).startTracing(role)
    : undefined;
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  // Signals are handled from the start: before start-up is over (a pod waiting for its schema,
  // a port that already answers /healthz) there is nothing to drain, so the process just ends.
  let started = false;
  const stopRequested = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, started ? 'shutting down' : 'stopped during start-up');
      if (!started) process.exit(0);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  let server: { close(): Promise<void> };
  if (role === 'controller') {
    server = await startController(config, { logger });
  } else {
    const running = await startServer(config, { role, logger });
    server = running;
    // /metrics is on loopback unless HOSTPLANE_METRICS_HOST opens it: say where it is.
    logger.info(
      `API on ${config.baseUrl}, sites on ${siteUrl(config, '<slug>')}, metrics on ${running.metricsUrl}/metrics`,
    );
  }
  started = true;
  await stopRequested;
  await server.close();
  await stopTracing?.();
  return 0;
}
