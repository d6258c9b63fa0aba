import { siteUrl, type Config } from '../config/index.js';
import { createLogger } from '../observability/index.js';
import { Platform } from '../platform/index.js';
import { openStoreForRole } from '../store/index.js';
import { adminCommands, runAdminCommand, type AdminCommand, type AdminInput } from './admin-socket.js';
import { platformOptions } from './account-wiring.js';
import { clusterSiteHook } from './wiring.js';

/**
 * Runs an admin command in this process, when no server holds the data dir (most admin calls go
 * to the running server's socket): opens the store, runs the command, closes the store.
 */
export async function runAdminLocally<C extends AdminCommand>(
  config: Config,
  command: C,
  input: AdminInput<C>,
): Promise<Record<string, unknown>> {
  // stderr: stdout carries the command's (JSON) output.
  const logger = createLogger(config.logLevel, process.stderr, config.logFormat);
  // PostgreSQL: the schema must be current (`hostplane migrate` first); PGlite migrates itself.
  const store = await openStoreForRole(config, { policy: 'check', logger });
  try {
    const commands = adminCommands(
      new Platform(store.db, platformOptions(config)),
      (slug) => siteUrl(config, slug),
      clusterSiteHook(config, logger),
      store.db,
    );
    return await runAdminCommand(commands, command, input);
  } finally {
    await store.close();
  }
}
