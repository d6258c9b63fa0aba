import path from 'node:path';
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/index.js';
import { openStore, type Store } from './db.js';
import { migrate, schemaVersion, waitForSchema, type SchemaVersion } from './migrate.js';
import { StandInProbes, untilReachable } from './start-up-wait.js';

/**
 * What a process does about the schema when it opens the store:
 * - `migrate`: apply pending migrations under the lock (`hostplane migrate`, `serve` with role all);
 * - `wait`: wait until someone else has (api, edge, controller pods: the Helm hook migrates);
 * - `check`: fail at once when behind (the admin CLI).
 * On PGlite every policy migrates: the process holds the data dir alone, so nobody else could.
 */
export type SchemaPolicy = 'migrate' | 'wait' | 'check';

export interface OpenForRoleOptions {
  policy: SchemaPolicy;
  logger: Logger;
  /** A store opened elsewhere (tests); it is checked or migrated the same way, and not closed on failure. */
  store?: Store;
  /** While waiting, answer probes on the role's port: /healthz 200, /readyz 503. */
  probes?: Pick<Config, 'port' | 'host'>;
  /**
   * The stand-in that answers them, when the caller has more to wait for after this (it then
   * closes it); by default one is made here from `probes` and closed on return.
   */
  standIn?: StandInProbes;
}

/** Opens the control-plane database for a role and brings it to a current schema (or fails). */
export async function openStoreForRole(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'schemaWaitMs'>,
  options: OpenForRoleOptions,
): Promise<Store> {
  const store =
    options.store ??
    (await openStore({ databaseUrl: config.databaseUrl, pgliteDir: path.join(config.dataDir, 'pglite') }));
  const standIn = options.standIn ?? new StandInProbes(options.probes);
  try {
    const prepare = () => prepareSchema(store, { ...options, standIn, waitMs: config.schemaWaitMs });
    // The database away at start (a restart, a failover, pods started before it): wait for it,
    // unready, rather than exit. The admin CLI (`check`) says so at once instead.
    if (options.policy === 'check') await prepare();
    else await untilReachable(prepare, { logger: options.logger, probes: standIn });
    return store;
  } catch (err) {
    if (!options.store) await store.close();
    throw err;
  } finally {
    if (!options.standIn) await standIn.down();
  }
}

async function prepareSchema(
  store: Store,
  options: OpenForRoleOptions & { waitMs: number; standIn: StandInProbes },
): Promise<void> {
  const { logger } = options;
  // The common case, and all of a warm start's schema work: one look, no lock, no migrator.
  const version = await schemaVersion(store);
  if (version.current) {
    logger.debug({ migration: version.newest }, 'database schema is current');
    return;
  }
  const policy = store.kind === 'pglite' ? 'migrate' : options.policy;
  if (policy === 'migrate') {
    const result = await migrate(store, {
      onLockWait: (pid) => logger.info({ pid }, 'another process is migrating; waiting for its lock'),
    });
    if (result.applied.length) logger.info({ applied: result.applied }, 'migrations applied');
    return;
  }
  if (policy === 'check') {
    await waitForSchema(store, { timeoutMs: 0 });
    return;
  }
  await options.standIn.up('waiting for the database schema');
  let logged = 0;
  const logBehind = (v: SchemaVersion) => {
    // Once, then every 30 s: a pod waiting for the Helm hook should say why, not flood its log.
    if (Date.now() - logged < 30_000) return;
    logged = Date.now();
    logger.warn(
      { pending: v.pending, waitSeconds: Math.round(options.waitMs / 1000) },
      'waiting for the database schema: `hostplane migrate` has not applied these migrations yet',
    );
  };
  logBehind(version);
  await waitForSchema(store, { timeoutMs: options.waitMs, onBehind: logBehind });
  logger.info('database schema is current; starting');
}
