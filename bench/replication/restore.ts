// Restore at start: one shard, one database per size filled through the batch API with random
// blobs. Each run stops the shard (SIGTERM: the graceful stop ships the last of the WAL), wipes
// that database's files, starts the shard again and times spawn → /readyz 200 (start-up restores
// the databases placed on it before it reports ready) and the restore itself (the shard's
// hostplane_sqlite_restore_duration_seconds: `litestream restore` to a temp file, integrity check,
// rename). A start with nothing wiped is the baseline; each restored database is checked whole.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { log, MIB, type Lab } from './lab.js';
import { api, createSite, histogram, installDatabase, scoped, wipeDatabase, type Shard } from './shard.js';

export interface RestoreResult {
  label: string;
  sizeBytes: number;
  readyMs: number[];
  restoreMs: number[];
  stopMs: number[];
}

const BLOB_BYTES = 3000; // one row per 4 KiB page
const ROWS_PER_BATCH = 200; // ~830 KB of JSON: under the API's 1 MiB body limit

async function fill(shard: Shard, headers: Record<string, string>, bytes: number): Promise<void> {
  await api(shard.port, 'POST', '/api/v1/sqlite/exec', headers, {
    sql: 'CREATE TABLE blobs (id INTEGER PRIMARY KEY, note TEXT NOT NULL, data BLOB NOT NULL)',
  });
  let size = 0;
  while (size < bytes) {
    // About a page per row: the last batch is cut to land near the target size.
    const rows = Math.min(ROWS_PER_BATCH, Math.ceil((bytes - size) / 4096));
    const statements = Array.from({ length: rows }, () => ({
      sql: 'INSERT INTO blobs (note, data) VALUES (?, ?)',
      params: [randomBytes(24).toString('hex'), { $base64: randomBytes(BLOB_BYTES).toString('base64') }],
    }));
    await api(shard.port, 'POST', '/api/v1/sqlite/batch', headers, { statements });
    size = (await api(shard.port, 'GET', '/api/v1/sqlite/version', headers)).sizeBytes as number;
  }
}

async function contents(shard: Shard, headers: Record<string, string>) {
  const query = await api(shard.port, 'POST', '/api/v1/sqlite/query', headers, {
    sql: 'SELECT count(*) AS n, sum(length(data)) AS bytes FROM blobs',
  });
  const version = await api(shard.port, 'GET', '/api/v1/sqlite/version', headers);
  return { ...(query.rows as { n: number; bytes: number }[])[0]!, sizeBytes: version.sizeBytes as number };
}

export async function benchRestore(
  lab: Lab,
  opts: { sizesMib: number[]; runs: number },
): Promise<RestoreResult[]> {
  const env = await lab.backing('required');
  const dir = await lab.dataDir('restore');
  let shard = await lab.shard('restore', dir, env);
  const apiKey = await createSite(lab.bin, shard, 'restore');
  const headers = (token: string) => scoped(shard, 'restore', token);
  const dbs: { mib: number; path: string; token: string }[] = [];
  for (const mib of opts.sizesMib) {
    const dbPath = `db-${mib}mib.sqlite`;
    const token = await installDatabase(shard, apiKey, dbPath);
    const t0 = performance.now();
    await fill(shard, headers(token), mib * MIB);
    log(`filled ${dbPath} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    dbs.push({ mib, path: dbPath, token });
  }
  const expected = new Map<string, Awaited<ReturnType<typeof contents>>>();
  for (const db of dbs) expected.set(db.path, await contents(shard, headers(db.token)));
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  await client.connect();
  const rows = await client.query<{ id: number; path: string }>('SELECT id, path FROM sqlite_databases');
  await client.end();
  const ids = new Map(rows.rows.map((r) => [r.path, r.id]));
  // The first stop also ships whatever the fill left behind: reported apart.
  log(`first graceful stop after the fill: ${(await shard.stop()).toFixed(0)} ms`);

  const results: RestoreResult[] = [];
  for (const db of [undefined, ...dbs]) {
    const result: RestoreResult = {
      label: db ? `${db.mib} MiB` : 'nothing wiped (baseline)',
      sizeBytes: db ? expected.get(db.path)!.sizeBytes : 0,
      readyMs: [],
      restoreMs: [],
      stopMs: [],
    };
    results.push(result);
    for (let run = 0; run < opts.runs; run++) {
      if (db) await wipeDatabase(dir, ids.get(db.path)!);
      shard = await lab.shard('restore', dir, env);
      const restore = await histogram(shard, 'hostplane_sqlite_restore_duration_seconds');
      if (restore.count !== (db ? 1 : 0))
        throw new Error(`${result.label}: ${restore.count} restores at start, expected ${db ? 1 : 0}`);
      result.readyMs.push(shard.readyMs);
      if (db) {
        result.restoreMs.push(restore.sum * 1000);
        const got = await contents(shard, headers(db.token));
        const want = expected.get(db.path)!;
        if (got.n !== want.n || got.bytes !== want.bytes)
          throw new Error(`${db.path} restored ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
      }
      result.stopMs.push(await shard.stop());
      log(
        `restore ${result.label} run ${run + 1}: ready ${shard.readyMs.toFixed(0)} ms` +
          (db ? `, restore ${(restore.sum * 1000).toFixed(0)} ms` : ''),
      );
    }
  }
  return results;
}
