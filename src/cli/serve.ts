import path from 'node:path';
import { parseArgs } from 'node:util';
import { siteUrl, type Config } from '../config/index.js';
import { createLogger } from '../observability/index.js';
import { UsageError } from './errors.js';

const roles = ['all', 'api', 'edge', 'controller'] as const;
export type ServeRole = (typeof roles)[number];

export function parseServeArgs(args: string[]): ServeRole {
  let role: string;
  try {
    ({
      values: { role },
    } = parseArgs({ args, options: { role: { type: 'string', default: 'all' } }, strict: true }));
  } catch (err) {
    throw new UsageError((err as Error).message, 'serve');
  }
  if (!(roles as readonly string[]).includes(role)) {
    throw new UsageError(`unknown role "${role}" (one of ${roles.join(', ')})`, 'serve');
  }
  return role as ServeRole;
}

/** `hostplane serve`: runs until SIGINT or SIGTERM, then drains and exits 0. */
export async function serve(config: Config, role: ServeRole): Promise<number> {
  // The OpenTelemetry SDK costs ~100 ms to load; only load it when spans are exported.
  const stopTracing = process.env.OTEL_EXPORTER_OTLP_ENDPOINT
    ? (await import('../observability/otel.js')).startTracing(role)
    : undefined;
  const logger = createLogger(config.logLevel);
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
  const { startController, startServer } = await import('../server.js');
  let server: { close(): Promise<void> };
  if (role === 'controller') {
    server = await startController(config, { logger });
  } else {
    server = await startServer(config, { role, logger });
    logger.info(`API on ${config.baseUrl}, sites on ${siteUrl(config, '<slug>')}`);
  }
  started = true;
  await stopRequested;
  await server.close();
  await stopTracing?.();
  return 0;
}

/** `hostplane migrate`: applies pending migrations under the migration lock and says what it did. */
export async function migrateCommand(config: Config): Promise<number> {
  const { openStore, migrate } = await import('../store/index.js');
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    pgliteDir: path.join(config.dataDir, 'pglite'),
  });
  try {
    const result = await migrate(store, {
      onLockWait: (pid) =>
        console.error(
          `hostplane migrate: another process${pid ? ` (database backend ${pid})` : ''} is migrating; waiting for it`,
        ),
    });
    const where = store.kind === 'postgres' ? 'PostgreSQL' : `PGlite in ${config.dataDir}`;
    const at = result.version.newest ?? 'none';
    if (result.applied.length) {
      console.log(`applied ${result.applied.length} migration(s) on ${where}: ${result.applied.join(', ')}`);
    } else {
      console.log(`schema already current on ${where} (at ${at}); nothing to apply`);
    }
    return 0;
  } finally {
    await store.close();
  }
}
