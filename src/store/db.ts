import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import * as schema from './schema.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** The control-plane database: PostgreSQL when a URL is given, otherwise PGlite in the data dir. */
export interface Store {
  db: Db;
  kind: 'postgres' | 'pglite';
  /**
   * Subscribes to a NOTIFY channel; returns an unsubscribe function. `onReconnect` runs after a
   * lost listening connection is re-established (notifications in between are lost).
   */
  listen(
    channel: string,
    onPayload: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url));

export interface OpenStoreOptions {
  databaseUrl?: string | undefined;
  /** Folder for PGlite's files; `memory://` keeps it in memory (tests). */
  pgliteDir?: string;
}

export async function openStore(options: OpenStoreOptions): Promise<Store> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl)
    : openPglite(options.pgliteDir ?? 'memory://');
}

async function openPostgres(url: string): Promise<Store> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // Idle clients can error when the server restarts; without a listener that would crash the process.
  pool.on('error', () => undefined);
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  await migratePg(drizzlePg(pool), { migrationsFolder });
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
    async ping() {
      await pool.query('select 1');
    },
    async close() {
      await Promise.all([...subscriptions].map((sub) => sub.stop()));
      await pool.end();
    },
  };
}

/** PGlite's folder is open in another live process (only one may open it). */
export class DataDirLockedError extends Error {
  constructor(readonly pid: number) {
    super(`the embedded database is in use by process ${pid}`);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A pid file beside PGlite's folder; a stale one (dead pid) is taken over. */
function lockDataDir(dir: string): () => void {
  const lockFile = `${path.resolve(dir)}.lock`;
  mkdirSync(path.dirname(lockFile), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: 'wx', mode: 0o600 });
      return () => rmSync(lockFile, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSync(lockFile, 'utf8').trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new DataDirLockedError(owner);
      }
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`could not lock ${lockFile}`);
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
  let retry: NodeJS.Timeout | undefined;
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
      drop(err);
      if (!stopped) scheduleResubscribe(250);
    });
    try {
      await conn.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      drop(err as Error);
      throw err;
    }
    if (stopped) return drop();
    dropCurrent = drop;
  };
  const scheduleResubscribe = (delayMs: number) => {
    retry = setTimeout(() => {
      subscribe().then(
        () => onReconnect?.(),
        () => !stopped && scheduleResubscribe(Math.min(delayMs * 2, 10_000)),
      );
    }, delayMs);
    retry.unref();
  };

  await subscribe();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      dropCurrent?.();
    },
  };
}

async function openPglite(dir: string): Promise<Store> {
  const unlock = dir.startsWith('memory://') ? () => undefined : lockDataDir(dir);
  let client: PGlite;
  try {
    client = await PGlite.create(dir);
  } catch (err) {
    unlock();
    throw err;
  }
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  await migratePglite(drizzlePglite(client), { migrationsFolder });
  return {
    db,
    kind: 'pglite',
    async listen(channel, onPayload) {
      const unsubscribe = await client.listen(channel, onPayload);
      return unsubscribe;
    },
    async ping() {
      await db.execute(sql`select 1`);
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
