import type { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import { lockDataDir } from './data-dir-lock.js';
import { vacuumPglite } from './pglite-maintenance.js';
import { seedFromTemplate } from './pglite-template.js';

export type Db = PgDatabase<PgQueryResultHKT>;
/** A transaction on the store, as handed to `db.transaction`'s callback. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Either: a statement that may run on its own or inside the caller's transaction. */
export type Executor = Db | Tx;

/** The control-plane database: PostgreSQL when a URL is given, otherwise PGlite in the data dir. */
export interface Store {
  db: Db;
  kind: 'postgres' | 'pglite';
  /**
   * Subscribes to a NOTIFY channel (the service's are listed in ./channels.ts); returns an
   * unsubscribe function. `onReconnect` runs after a lost listening connection is re-established
   * (notifications in between are lost).
   */
  listen(
    channel: string,
    onPayload: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>>;
  ping(): Promise<void>;
  /**
   * The upkeep the database does not do itself: on PGlite a VACUUM (ANALYZE), as it has no
   * autovacuum (./pglite-maintenance.ts); nothing on PostgreSQL. Returns the seconds it took.
   */
  maintain(): Promise<number>;
  /**
   * Runs `fn` on one dedicated connection, for session state such as advisory locks (the
   * migration lock of ./migrate.ts). The connection is discarded afterwards, never pooled, so a
   * lock left behind by a failure cannot outlive the call.
   */
  session<T>(fn: (session: StoreSession) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** One connection of the store (see Store.session). */
export interface StoreSession {
  /** One statement with `$1`-style parameters; the rows as objects. */
  query<Row extends Record<string, unknown>>(text: string, params?: unknown[]): Promise<Row[]>;
  /** drizzle's migrator on this connection: applies what the folder's journal has and the database lacks. */
  applyMigrations(migrationsFolder: string): Promise<void>;
}

export interface OpenStoreOptions {
  databaseUrl?: string | undefined;
  /** Folder for PGlite's files; `memory://` keeps it in memory (tests). */
  pgliteDir?: string;
  /** A new PGlite folder starts from the packed template when there is one (default true). */
  pgliteTemplate?: boolean;
}

/**
 * Opens the database; it does not migrate. Callers decide (./schema-gate.ts): `migrate` and the
 * standalone server apply migrations under a lock, other roles wait for them.
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl)
    : openPglite(options.pgliteDir ?? 'memory://', options.pgliteTemplate ?? true);
}

async function openPostgres(url: string): Promise<Store> {
  // Loaded here so that a standalone process never loads pg (nor a cluster one PGlite).
  const [{ default: pgModule }, { drizzle: drizzlePg }] = await Promise.all([
    import('pg'),
    import('drizzle-orm/node-postgres'),
  ]);
  // A try to reach the database is bounded (a connect, or a wait for a free client): a request
  // fails with a 503 rather than hanging while PostgreSQL is away.
  const pool = new pgModule.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 10_000 });
  // An 'error' event with no listener ends the process. The pool reports idle clients' errors
  // here; checked-out clients (drizzle's transactions, LISTEN connections, sessions) emit on the
  // client itself, so every client gets a listener as it is made. The query in flight on a lost
  // connection fails on its own (and is answered 503, see errors/outage.ts).
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = drizzlePg(pool) as Db;
  const subscriptions = new Set<{ stop(): Promise<void> }>();
  return {
    db,
    kind: 'postgres',
    async listen(channel, onPayload, onReconnect) {
      const subscription = await listenWithReconnect(pool, channel, onPayload, onReconnect);
      subscriptions.add(subscription);
      return async () => {
        subscriptions.delete(subscription);
        await subscription.stop();
      };
    },
    maintain: () => Promise.resolve(0),
    async ping() {
      await pool.query('select 1');
    },
    async session(fn) {
      const client = await pool.connect();
      // A dropped connection must not crash the process; the pending query fails instead.
      const onError = () => undefined;
      client.on('error', onError);
      try {
        return await fn({
          async query<Row extends Record<string, unknown>>(text: string, params?: unknown[]) {
            return (await client.query<Row>(text, params)).rows;
          },
          async applyMigrations(migrationsFolder) {
            const { migrate } = await import('drizzle-orm/node-postgres/migrator');
            // On this client (not the pool), so the migration runs inside the session's lock.
            await migrate(drizzlePg(client), { migrationsFolder });
          },
        });
      } finally {
        client.off('error', onError);
        client.release(true);
      }
    },
    async close() {
      await Promise.all([...subscriptions].map((sub) => sub.stop()));
      await pool.end();
    },
  };
}

/**
 * LISTEN on a dedicated pooled connection. When that connection dies (server restart, failover,
 * terminated backend) it is released and a new one subscribes again, with back-off; a checked-out
 * client with no error listener would otherwise crash the process.
 */
async function listenWithReconnect(
  pool: pg.Pool,
  channel: string,
  onPayload: (payload: string) => void,
  onReconnect?: () => void,
): Promise<{ stop(): Promise<void> }> {
  let stopped = false;
  /**
   * The one retry chain: set from the moment a resubscription is scheduled until it succeeds.
   * A connection lost mid-LISTEN both rejects the query and emits 'error'; without this, each
   * path would start its own chain and each chain would end holding a connection.
   */
  let retry: NodeJS.Timeout | undefined;
  /** The attempt under way, so that stop() can release what it ends up holding. */
  let attempt: Promise<void> | undefined;
  /** Drops the current listening connection; it is destroyed, never reused (that also ends LISTEN). */
  let dropCurrent: (() => void) | undefined;

  const subscribe = async (): Promise<void> => {
    const conn = await pool.connect();
    let released = false;
    const drop = (err?: Error) => {
      if (released) return;
      released = true;
      if (dropCurrent === drop) dropCurrent = undefined;
      conn.release(err ?? true);
    };
    conn.on('notification', (msg) => {
      if (msg.channel === channel) onPayload(msg.payload ?? '');
    });
    conn.on('error', (err) => {
      // Only the connection that finished subscribing schedules; a failed LISTEN is retried by
      // the chain that attempted it.
      const wasListening = dropCurrent === drop;
      drop(err);
      if (wasListening) scheduleResubscribe(250);
    });
    try {
      await conn.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      drop(err as Error);
      throw err;
    }
    if (stopped || released) {
      drop();
      if (!stopped) throw new Error('the listening connection was lost');
      return;
    }
    dropCurrent = drop;
  };
  const attemptSubscribe = (): Promise<void> => {
    attempt = subscribe();
    return attempt.finally(() => (attempt = undefined));
  };
  const scheduleResubscribe = (delayMs: number) => {
    if (stopped || retry) return;
    retry = setTimeout(() => {
      attemptSubscribe().then(
        () => {
          retry = undefined;
          if (!stopped) onReconnect?.();
        },
        () => {
          retry = undefined;
          scheduleResubscribe(Math.min(delayMs * 2, 10_000));
        },
      );
    }, delayMs);
    retry.unref();
  };

  // The database lost between start-up and here: subscribe when it is back (as after any loss).
  await attemptSubscribe().catch(() => scheduleResubscribe(250));
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      // An attempt under way releases its connection itself once it sees `stopped`.
      await attempt?.catch(() => undefined);
      dropCurrent?.();
    },
  };
}

async function openPglite(dir: string, useTemplate: boolean): Promise<Store> {
  const inMemory = dir.startsWith('memory://');
  const unlock = inMemory ? () => undefined : await lockDataDir(dir);
  let client: PGlite;
  let drizzlePglite: typeof import('drizzle-orm/pglite').drizzle;
  try {
    const [{ PGlite }, drizzleModule] = await Promise.all([
      import('@electric-sql/pglite'),
      import('drizzle-orm/pglite'),
    ]);
    drizzlePglite = drizzleModule.drizzle;
    // A new folder starts from the template (initdb and migrations done at build time), which
    // takes a fraction of a second instead of PGlite's several-second initdb.
    if (!inMemory && useTemplate) await seedFromTemplate(dir);
    client = await PGlite.create(dir);
  } catch (err) {
    unlock();
    throw err;
  }
  const db = drizzlePglite(client) as Db;
  return {
    db,
    kind: 'pglite',
    async listen(channel, onPayload) {
      const unsubscribe = await client.listen(channel, onPayload);
      return unsubscribe;
    },
    maintain: () => vacuumPglite(client),
    async ping() {
      await db.execute(sql`select 1`);
    },
    async session(fn) {
      // PGlite has a single session: it is the dedicated connection (its work is serialized).
      return fn({
        async query<Row extends Record<string, unknown>>(text: string, params?: unknown[]) {
          return (await client.query<Row>(text, params)).rows;
        },
        async applyMigrations(migrationsFolder) {
          const { migrate } = await import('drizzle-orm/pglite/migrator');
          await migrate(drizzlePglite(client), { migrationsFolder });
        },
      });
    },
    async close() {
      await client.close();
      unlock();
    },
  };
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
