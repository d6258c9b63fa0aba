import path from 'node:path';
import type { Config } from '../config/index.js';

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
