// Not a benchmark: the reproduction of a bug bench-replication ran into (a database let go with
// `discard: true` by a lone standalone shard while databases were being created). Shards.renew()
// sends the UPDATE for the leases held when the round starts, then computes `lost` from `held` as
// it is after the await: a database acquired while the UPDATE was in flight counts as lost, and
// its file is removed without a last sync. Here the UPDATE is held up on a row lock (deterministic),
// a new database takes acknowledged writes meanwhile, and is read again afterwards.
//
//   make build && scripts/node.sh exec npx tsx bench/replication/lease-race.ts [path to main.js]
//
// On acf1e43 it prints "no such table: t" for b.sqlite: its file was removed and the next call
// created an empty database (PostgreSQL still had version 0, and Litestream had not shipped it
// yet). With `lost` computed from the ids the UPDATE was sent for (a snapshot taken before the
// await, and still held), it prints 5 rows.
import pg from 'pg';
import { Lab, sleep } from './lab.js';
import { api, createSite, installDatabase, scoped } from './shard.js';

const lab = await Lab.start(process.argv[2] ?? 'dist/src/cli/main.js');
try {
  const env = await lab.backing('required');
  const shard = await lab.shard('race', await lab.dataDir('race'), env);
  const apiKey = await createSite(lab.bin, shard, 'race');
  const a = scoped(shard, 'race', await installDatabase(shard, apiKey, 'a.sqlite'));
  await api(shard.port, 'POST', '/api/v1/sqlite/exec', a, { sql: 'CREATE TABLE t (x)' });
  const locker = new pg.Client({ connectionString: env.DATABASE_URL });
  const watcher = new pg.Client({ connectionString: env.DATABASE_URL });
  await Promise.all([locker.connect(), watcher.connect()]);
  const held = await locker.query<{ database_id: number }>('SELECT database_id FROM sqlite_leases');
  console.log(
    'leases held:',
    held.rows.map((r) => r.database_id),
  );
  await locker.query('BEGIN');
  await locker.query('SELECT 1 FROM sqlite_leases WHERE database_id = $1 FOR UPDATE', [
    held.rows[0]!.database_id,
  ]);
  // The next renewal round (every 10 s) waits on that row.
  for (;;) {
    const { rows } = await watcher.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE query ILIKE 'update "sqlite_leases"%' AND wait_event_type = 'Lock'`,
    );
    if (rows[0]!.n > 0) break;
    await sleep(200);
  }
  const b = scoped(shard, 'race', await installDatabase(shard, apiKey, 'b.sqlite'));
  await api(shard.port, 'POST', '/api/v1/sqlite/exec', b, { sql: 'CREATE TABLE t (x)' });
  for (let i = 1; i <= 5; i++)
    await api(shard.port, 'POST', '/api/v1/sqlite/exec', b, { sql: 'INSERT INTO t VALUES (?)', params: [i] });
  console.log('renewal round blocked; b.sqlite created, 5 inserts acknowledged; the round goes on');
  await locker.query('COMMIT');
  await sleep(1_500);
  console.log('leases after:', (await watcher.query('SELECT database_id, shard FROM sqlite_leases')).rows);
  await Promise.all([locker.end(), watcher.end()]);
  const read = await api(shard.port, 'POST', '/api/v1/sqlite/query', b, {
    sql: 'SELECT count(*) AS n FROM t',
  }).catch((err: Error) => ({ error: err.message }));
  console.log('b.sqlite read again (expected 5 rows):', JSON.stringify(read));
  await shard.stop();
} finally {
  await lab.close();
}
