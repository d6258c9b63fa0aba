import type http from 'node:http';
import type { Config } from '../config/index.js';
import { startMetricsServer, type MetricsServer } from '../observability/index.js';

/** The metrics port of a role; if it cannot listen, the public server is closed too. */
export async function metricsBeside(server: http.Server, config: Config): Promise<MetricsServer> {
  try {
    return await startMetricsServer(config.metricsPort, config.metricsHost);
  } catch (err) {
    await closeNow(server);
    throw err;
  }
}

/** Stops a server at once: open connections are cut, not drained. */
export async function closeNow(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
