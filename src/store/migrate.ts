import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AppError } from '../errors/index.js';
import type { Store, StoreSession } from './db.js';

/**
 * Schema migrations as an explicit step. drizzle's migrator takes no lock, so two processes
 * migrating one database at once (the Helm hook and a pod, two `serve`s) could both apply a
 * migration; here it runs under a PostgreSQL advisory lock held on one dedicated connection.
 * Processes that must not migrate compare the database's migration table with the journal this
 * build ships and wait until it is current (./schema-gate.ts).
 */
export const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url));

/**
 * The advisory lock key ("hostplane migrate" in a 31-bit number, so that pg_locks shows it as
 * classid 0, objid KEY). Session-level: released by unlock, or when the connection ends.
 */
export const MIGRATION_LOCK_KEY = 0x6d696772; // "migr"

/** drizzle's bookkeeping table (its defaults: schema `drizzle`, table `__drizzle_migrations`). */
const MIGRATIONS_TABLE = 'drizzle.__drizzle_migrations';

interface JournalEntry {
  tag: string;
  /** drizzle stores this as the row's created_at; a migration is applied when created_at ≥ when. */
  when: number;
}

let journalCache: JournalEntry[] | undefined;

/** The migrations this build ships, oldest first, from drizzle-kit's journal. */
export function journal(): JournalEntry[] {
  journalCache ??= (
    JSON.parse(readFileSync(`${migrationsFolder}/meta/_journal.json`, 'utf8')) as { entries: JournalEntry[] }
  ).entries
    .map(({ tag, when }) => ({ tag, when }))
    .sort((a, b) => a.when - b.when);
  return journalCache;
}

export interface SchemaVersion {
  /** The newest migration of this build the database has, if any. */
  newest: string | undefined;
  /** This build's migrations the database lacks, oldest first (drizzle's rule: newer than its newest row). */
  pending: string[];
  /** All of this build's migrations are applied (the database may have newer ones, from a newer build). */
  current: boolean;
}

async function versionOn(session: StoreSession): Promise<SchemaVersion> {
  const [table] = await session.query<{ present: boolean }>(
    `select to_regclass('${MIGRATIONS_TABLE}') is not null as present`,
  );
  let newestApplied = -Infinity;
  if (table?.present) {
    const [row] = await session.query<{ newest: string | null }>(
      `select max(created_at)::text as newest from ${MIGRATIONS_TABLE}`,
    );
    if (row?.newest != null) newestApplied = Number(row.newest);
  }
  const entries = journal();
  const pending = entries.filter((m) => m.when > newestApplied).map((m) => m.tag);
  const applied = entries.filter((m) => m.when <= newestApplied);
  return { newest: applied.at(-1)?.tag, pending, current: pending.length === 0 };
}

/** Where the database's schema stands against this build's migrations (two cheap queries, no lock). */
export function schemaVersion(store: Store): Promise<SchemaVersion> {
  return store.session(versionOn);
}

export interface MigrateResult {
  /** The migrations this call applied (none when another process had already applied them). */
  applied: string[];
  version: SchemaVersion;
}

export interface MigrateOptions {
  /** Called once when another session holds the lock, with its backend pid when visible. */
  onLockWait?: (holderPid: number | undefined) => void;
}

/**
 * Applies pending migrations under the migration lock. Whoever gets the lock second finds the
 * schema current and applies nothing. Same path on PGlite (one session, so the lock is always free).
 */
export async function migrate(store: Store, options: MigrateOptions = {}): Promise<MigrateResult> {
  return store.session(async (session) => {
    const [first] = await session.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [
      MIGRATION_LOCK_KEY,
    ]);
    if (!first?.locked) {
      const [holder] = await session.query<{ pid: number }>(
        `select pid from pg_locks
          where locktype = 'advisory' and granted and classid = 0 and objid = $1::bigint::oid and objsubid = 1
          limit 1`,
        [MIGRATION_LOCK_KEY],
      );
      options.onLockWait?.(holder?.pid);
      await session.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    }
    try {
      const before = await versionOn(session);
      if (before.current) return { applied: [], version: before };
      await session.applyMigrations(migrationsFolder);
      return { applied: before.pending, version: await versionOn(session) };
    } finally {
      // The session's connection is discarded anyway; unlocking first lets a waiter in at once.
      await session.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    }
  });
}

/** The database lacks migrations this build needs, and this process may not apply them. */
const schemaNotCurrent = (version: SchemaVersion, waitedMs: number) =>
  new AppError('SCHEMA_NOT_CURRENT', { pending: version.pending, total: journal().length, waitedMs });

export interface WaitOptions {
  /** Give up after this long (0: check once). */
  timeoutMs: number;
  /** Time between checks. Default 2 s. */
  intervalMs?: number;
  /** Called after each check that found the schema behind. */
  onBehind?: (version: SchemaVersion) => void;
}

/** Resolves once the schema is current; throws SCHEMA_NOT_CURRENT when the wait runs out. */
export async function waitForSchema(store: Store, options: WaitOptions): Promise<SchemaVersion> {
  const started = Date.now();
  const interval = options.intervalMs ?? 2_000;
  for (;;) {
    const version = await schemaVersion(store);
    if (version.current) return version;
    const left = started + options.timeoutMs - Date.now();
    if (left <= 0) throw schemaNotCurrent(version, options.timeoutMs);
    options.onBehind?.(version);
    await new Promise((resolve) => setTimeout(resolve, Math.min(interval, left)));
  }
}
