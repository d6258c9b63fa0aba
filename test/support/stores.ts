import { afterEach, inject } from 'vitest';
import { openStore, type Store } from '../../src/store/index.js';
import { createDatabase } from './postgres.js';

export type Backend = 'postgres' | 'pglite';

/**
 * Opens bare stores for tests that talk to the control-plane database without a server: a new
 * database on the run's PostgreSQL, or an in-memory PGlite (no template, so migrations run for
 * real). Every store opened by a test is closed after it.
 */
export function storesClosedAfterEach(): (backend: Backend) => Promise<Store> {
  const opened: Store[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });
  return async (backend) => {
    const store =
      backend === 'postgres'
        ? await openStore({ databaseUrl: await createDatabase(inject('postgresUrl')) })
        : await openStore({ pgliteDir: 'memory://', pgliteTemplate: false });
    opened.push(store);
    return store;
  };
}
