import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { isAppError } from '../../../src/errors/index.js';
import { createLogger } from '../../../src/observability/index.js';
import {
  journal,
  migrate,
  MIGRATION_LOCK_KEY,
  openStore,
  openStoreForRole,
  schemaVersion,
  waitForSchema,
  type Store,
} from '../../../src/store/index.js';
import { rawRequest } from '../../support/hostplane.js';
import { freePort } from '../../support/procs.js';
import { createDatabase } from '../../support/postgres.js';

// Migrations on a real PostgreSQL: one applier at a time under the advisory lock, and the roles
// that may not migrate waiting for the journal's version.
const tags = journal().map((m) => m.tag);
const logger = createLogger('silent');
const opened: Store[] = [];
const open = async (databaseUrl: string): Promise<Store> => {
  const store = await openStore({ databaseUrl });
  opened.push(store);
  return store;
};

afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

const migrationRows = async (url: string): Promise<number> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      'select count(*)::int as n from drizzle.__drizzle_migrations',
    );
    return rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
};

describe('migrations on PostgreSQL', () => {
  it('a new database is behind by every migration; opening it applies none', async () => {
    const store = await open(await createDatabase(inject('postgresUrl')));
    expect(await schemaVersion(store)).toEqual({ newest: undefined, pending: tags, current: false });
  });

  it('concurrent migrators apply each migration exactly once', async () => {
    const url = await createDatabase(inject('postgresUrl'));
    const stores = await Promise.all([1, 2, 3, 4].map(() => open(url)));
    const results = await Promise.all(stores.map((s) => migrate(s)));
    expect(results.flatMap((r) => r.applied).sort()).toEqual([...tags].sort());
    for (const r of results) expect(r.version).toMatchObject({ current: true, newest: tags.at(-1) });
    expect(await migrationRows(url)).toBe(tags.length);
  });

  it('waits for the lock held by another session, naming its backend, and then finds nothing to do', async () => {
    const url = await createDatabase(inject('postgresUrl'));
    await migrate(await open(url));
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      const { rows } = await holder.query<{ pid: number }>('select pg_backend_pid() as pid');
      let waitedFor: number | undefined = -1;
      const running = migrate(await open(url), { onLockWait: (pid) => (waitedFor = pid) });
      const settled = await Promise.race([
        running.then(() => 'done'),
        new Promise((resolve) => setTimeout(() => resolve('waiting'), 500)),
      ]);
      expect(settled).toBe('waiting');
      expect(waitedFor).toBe(rows[0]?.pid);
      await holder.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      expect((await running).applied).toEqual([]);
    } finally {
      await holder.end();
    }
  });

  it('waitForSchema gives up with a clear error, or returns once someone migrates', async () => {
    const url = await createDatabase(inject('postgresUrl'));
    const store = await open(url);
    const error = await waitForSchema(store, { timeoutMs: 300, intervalMs: 100 }).catch((e: unknown) => e);
    expect(isAppError(error, 'SCHEMA_NOT_CURRENT')).toBe(true);
    expect((error as Error).message).toMatch(/not current after waiting .*not applied \(0000_init/);
    expect(isAppError(error) && error.hint).toMatch(/hostplane migrate/);

    const waiting = waitForSchema(store, { timeoutMs: 30_000, intervalMs: 100 });
    await migrate(await open(url));
    expect(await waiting).toMatchObject({ current: true, pending: [] });
  });

  it('a role that waits answers /healthz but not /readyz until the schema is current', async () => {
    const url = await createDatabase(inject('postgresUrl'));
    const port = await freePort();
    const config = { databaseUrl: url, dataDir: '/nonexistent', schemaWaitMs: 30_000 };
    const gate = openStoreForRole(config, { policy: 'wait', logger, probes: { port, host: '127.0.0.1' } });
    const probe = async (path: string) => (await rawRequest(port, path, {}).catch(() => undefined))?.status;
    await expect.poll(() => probe('/healthz'), { timeout: 10_000 }).toBe(200);
    expect(await probe('/readyz')).toBe(503);
    await migrate(await open(url));
    const store = await gate;
    opened.push(store);
    expect((await schemaVersion(store)).current).toBe(true);
    // The stand-in is gone: the real server can take the port.
    expect(await probe('/healthz')).toBeUndefined();
  });

  it('the check policy (admin CLI) fails at once on a database behind', async () => {
    const url = await createDatabase(inject('postgresUrl'));
    const config = { databaseUrl: url, dataDir: '/nonexistent', schemaWaitMs: 30_000 };
    await expect(openStoreForRole(config, { policy: 'check', logger })).rejects.toThrow();
  });
});

describe('migrations on PGlite', () => {
  it('take the same path (the lock is always free in one session), and a second run applies nothing', async () => {
    const store = await openStore({ pgliteDir: 'memory://' });
    opened.push(store);
    expect((await migrate(store)).applied).toEqual(tags);
    expect(await migrate(store)).toMatchObject({ applied: [], version: { current: true } });
  });
});
