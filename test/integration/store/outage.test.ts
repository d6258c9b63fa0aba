import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unreachableDependency } from '../../../src/errors/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { eventually } from '../../support/eventually.js';
import { createDatabase, startPostgres, type PostgresServer } from '../../support/postgres.js';

// Issue 16, item 13: a PostgreSQL restart must not end the process. The connections that used to
// lack an error listener are the checked-out ones (a transaction in flight, a session); the LISTEN
// connections must come back by themselves and say so (their caches are dropped on reconnect).
// A private PostgreSQL: it is stopped here.

describe('the store through a PostgreSQL restart', () => {
  let postgres: PostgresServer;
  let store: Store;
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);

  beforeAll(async () => {
    postgres = await startPostgres();
    store = await openStore({ databaseUrl: await createDatabase(postgres.url) });
    // Vitest reports an uncaught error too; collecting it here also names it in the assertion.
    process.on('uncaughtException', onUncaught);
  });
  afterAll(async () => {
    process.off('uncaughtException', onUncaught);
    await store?.close();
    await postgres?.stop();
  });

  for (const mode of ['fast', 'immediate'] as const) {
    it(`survives a ${mode} shutdown with a transaction and a session open; LISTEN comes back`, async () => {
      const received: string[] = [];
      let reconnects = 0;
      const unlisten = await store.listen(
        'outage_test',
        (payload) => received.push(payload),
        () => reconnects++,
      );
      let halted: () => void = () => undefined;
      const stopped = new Promise<void>((resolve) => (halted = resolve));
      // A transaction and a session hold their clients (checked out of the pool) across the stop.
      const inTransaction = store.db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        await stopped;
        await tx.execute(sql`select 1`);
      });
      const inSession = store.session(async (session) => {
        await session.query('select 1');
        await stopped;
        await session.query('select 1');
      });
      inTransaction.catch(() => undefined);
      inSession.catch(() => undefined);
      // The idle pool gets a few clients too (the pool's own 'error' path).
      await Promise.all(Array.from({ length: 4 }, () => store.ping()));

      await postgres.halt(mode);
      // The lost connections' error events arrive as the backend goes away; give them a turn.
      await eventually('a query failing for the outage', async () => {
        const err = await store.ping().then(
          () => undefined,
          (e: unknown) => e,
        );
        return err !== undefined && unreachableDependency(err) === 'database';
      });
      halted();
      for (const pending of [inTransaction, inSession]) {
        const err = await pending.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(unreachableDependency(err), String(err)).toBe('database');
      }
      expect(uncaught).toEqual([]);

      await postgres.resume();
      await eventually('the store answering again', () => store.ping().then(() => true));
      await eventually('LISTEN re-established (and said so)', () => reconnects > 0);
      await eventually('notifications arriving again', async () => {
        await store.db.execute(sql`select pg_notify('outage_test', 'back')`);
        return received.includes('back');
      });
      expect(uncaught).toEqual([]);
      await unlisten();
    });
  }
});
