import type { DomainModule } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import { PGLITE_VACUUM_EVERY_MS, PGLITE_VACUUM_FIRST_AFTER_MS, type Store } from '../store/index.js';

/** Background duties of the api role: each sweep is idempotent, so several replicas may run them. */
export function startSweeps(modules: DomainModule[], logger: Logger): () => void {
  const timers: NodeJS.Timeout[] = [];
  for (const sweep of modules.flatMap((module) => module.sweeps ?? [])) {
    const run = () => {
      sweep.run().then(
        (n) => n > 0 && logger.info({ sweep: sweep.name, removed: n }, 'sweep finished'),
        (err: unknown) => logger.warn({ err, sweep: sweep.name }, 'sweep failed'),
      );
    };
    timers.push(setInterval(run, sweep.everyMs).unref());
    if (sweep.firstAfterMs !== undefined) timers.push(setTimeout(run, sweep.firstAfterMs).unref());
  }
  return () => timers.forEach(clearTimeout);
}

/** The store's own upkeep: PGlite has no autovacuum (store/pglite-maintenance.ts); PostgreSQL's does it. */
export function storeUpkeep(store: Store, logger: Logger): DomainModule[] {
  if (store.kind !== 'pglite') return [];
  const vacuum = async () => {
    logger.debug({ seconds: await store.maintain() }, 'database vacuumed');
    return 0;
  };
  return [
    {
      name: 'store',
      sweeps: [
        {
          name: 'pglite_vacuum',
          everyMs: PGLITE_VACUUM_EVERY_MS,
          firstAfterMs: PGLITE_VACUUM_FIRST_AFTER_MS,
          run: vacuum,
        },
      ],
    },
  ];
}
