import client from 'prom-client';
import { registry } from '../observability/index.js';

/**
 * PGlite runs PostgreSQL as one single-user backend: there is no autovacuum worker. Without one,
 * every row a deploy's switch replaces (site_files), every manifest pruned (deploy_files) and
 * every claim row leaves dead tuples and index entries that nothing makes reusable: 40 switches of
 * a 300-file site left 2.3 MB of heap and 1.7 MB of index for its 300 live rows, growing with each
 * one. Nor are there statistics for the planner to plan with. A standalone server therefore runs
 * `VACUUM (ANALYZE)` itself, a minute after start and every PGLITE_VACUUM_EVERY_MS (PostgreSQL's
 * own autovacuum does this work on a cluster install).
 */
export const PGLITE_VACUUM_EVERY_MS = 10 * 60_000;

const vacuumSeconds = new client.Histogram({
  name: 'hostplane_pglite_vacuum_seconds',
  help: 'Duration of the standalone database’s periodic VACUUM (ANALYZE) (PGlite has no autovacuum).',
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** The first vacuum after start (a session shorter than the period gets one too). */
export const PGLITE_VACUUM_FIRST_AFTER_MS = 60_000;

/** What vacuumPglite needs of the client: statements outside a transaction. */
export interface Vacuumable {
  exec(statement: string): Promise<unknown>;
  query<Row>(statement: string): Promise<{ rows: Row[] }>;
}

/**
 * `VACUUM (ANALYZE)` of every table, one at a time. PGlite runs each statement synchronously on
 * the main thread, so the process (the edge's serving included) waits for the table being
 * vacuumed; between two tables it turns the event loop, so the longest stall is one table's
 * vacuum: milliseconds on a laptop's data, since pages a former run left all-visible are skipped.
 * Returns the seconds it took.
 */
export async function vacuumPglite(client: Vacuumable): Promise<number> {
  const started = performance.now();
  const { rows } = await client.query<{ name: string }>(`
    select c.oid::regclass::text as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where c.relkind = 'r' and n.nspname not in ('pg_catalog', 'information_schema')
      and n.nspname not like 'pg\\_%' order by 1`);
  for (const { name } of rows) {
    await new Promise((resolve) => setImmediate(resolve));
    // regclass's text is the name as SQL reads it (quoted where it must be).
    await client.exec(`VACUUM (ANALYZE) ${name}`);
  }
  const seconds = (performance.now() - started) / 1000;
  vacuumSeconds.observe(seconds);
  return seconds;
}
