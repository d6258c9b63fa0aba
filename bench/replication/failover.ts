// RTO and RPO of the automatic failover of a lost SQLite shard (src/sqlite/failover.ts), under a
// steady write load: two real shards (`hostplane serve`, Litestream children) on the suite's
// PostgreSQL and MinIO; one client writes one row per call through shard b to a database owned by
// shard a (b forwards), retrying refusals after 50 ms with a new id. Then shard a is lost:
//   kill: SIGKILL to a and its Litestream (a node gone), or
//   stop: SIGTERM (a graceful stop: last sync, leases released), and a never comes back.
// RTO: from the loss to the first acknowledged write that was sent after it (b has restored the
// database from its replica and serves it). RPO: writes acknowledged before the loss that the
// database no longer has, and how long before the loss the oldest of them was acknowledged.
//
//   make build && scripts/node.sh exec npx tsx bench/replication/failover.ts [--runs 3] \
//     [--modes kill,stop] [--write-seconds 5] [--failover-after-ms 20000] [--json]
import { parseArgs } from 'node:util';
import { request } from '../support/http.js';
import { childPids } from '../../test/support/litestream.js';
import { Lab, log, median } from './lab.js';
import { createSite, installDatabase, api, type Shard } from './shard.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    modes: { type: 'string', default: 'kill,stop' },
    'write-seconds': { type: 'string', default: '5' },
    'failover-after-ms': { type: 'string', default: '20000' },
    json: { type: 'boolean', default: false },
    bin: { type: 'string', default: 'dist/src/cli/main.js' },
  },
});
const runs = Number(values.runs);
const modes = values.modes.split(',') as ('kill' | 'stop')[];
const writeMs = Number(values['write-seconds']) * 1000;

interface Result {
  mode: 'kill' | 'stop';
  rtoMs: number;
  ackedBefore: number;
  lost: number;
  /** How long before the loss the oldest lost write was acknowledged (0: none lost). */
  lostWindowMs: number;
  writesPerSecond: number;
}

const lab = await Lab.start(values.bin);
const results: Result[] = [];
try {
  for (let run = 1; run <= runs; run++)
    for (const mode of modes) {
      const result = await once(mode, run);
      log(
        `${mode} #${run}: RTO ${result.rtoMs} ms, lost ${result.lost} of ${result.ackedBefore} ` +
          `(window ${result.lostWindowMs} ms), ${result.writesPerSecond.toFixed(0)} writes/s`,
      );
      results.push(result);
    }
} finally {
  await lab.close();
}

if (values.json) console.log(JSON.stringify(results, null, 2));
else
  for (const mode of modes) {
    const of = results.filter((r) => r.mode === mode);
    console.log(
      `${mode}: RTO median ${median(of.map((r) => r.rtoMs))} ms (${of.map((r) => r.rtoMs).join(', ')}); ` +
        `lost ${of.map((r) => `${r.lost}/${r.ackedBefore}`).join(', ')} acknowledged writes; ` +
        `oldest lost acknowledged ${of.map((r) => r.lostWindowMs).join(', ')} ms before the loss; ` +
        `${median(of.map((r) => r.writesPerSecond)).toFixed(0)} writes/s`,
    );
  }

async function once(mode: 'kill' | 'stop', run: number): Promise<Result> {
  const env = {
    ...(await lab.backing('required')),
    HOSTPLANE_SQLITE_FAILOVER_AFTER_MS: values['failover-after-ms'],
  };
  const a = await lab.shard(`fo-a${run}`, await lab.dataDir('a'), env);
  const apiKey = await createSite(lab.bin, a, 'failover');
  const token = await installDatabase(a, apiKey, 'bench.sqlite');
  const headers = { 'x-sqlite-token': token, origin: `http://failover.localhost:${a.port}` };
  await api(a.port, 'POST', '/api/v1/sqlite/exec', headers, {
    sql: 'CREATE TABLE log (id INTEGER PRIMARY KEY)',
  });
  const b = await lab.shard(`fo-b${run}`, await lab.dataDir('b'), {
    ...env,
    HOSTPLANE_BASE_URL: a.env.HOSTPLANE_BASE_URL,
  });
  const via = { ...headers, host: `localhost:${a.port}`, 'content-type': 'application/json' };
  const send = (shard: Shard, json: unknown) =>
    request(shard.port, 'POST', '/api/v1/sqlite/exec', via, JSON.stringify(json));

  const acked: { id: number; sentAt: number; at: number }[] = [];
  const state = { stop: false };
  const writing = (async () => {
    for (let id = 1; !state.stop; id++) {
      const sentAt = performance.now();
      const res = await send(b, { sql: 'INSERT INTO log (id) VALUES (?)', params: [id] }).catch(() => ({
        status: 0,
      }));
      if (res.status === 200) acked.push({ id, sentAt, at: performance.now() });
      else await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const start = performance.now();
  while (performance.now() - start < writeMs) await new Promise((r) => setTimeout(r, 50));

  const lostAt = performance.now();
  if (mode === 'kill') {
    const children = childPids(a.pid);
    a.child.kill('SIGKILL');
    for (const pid of children) process.kill(pid, 'SIGKILL');
  } else a.child.kill('SIGTERM');
  const after = () => acked.filter((x) => x.sentAt > lostAt);
  const deadline = lostAt + 120_000;
  while (after().length < 20 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  state.stop = true;
  await writing;
  if (after().length === 0) throw new Error(`${mode}: no write answered within 120 s of the loss`);
  const rtoMs = Math.round(after()[0]!.at - lostAt);

  const rows = (await api(
    b.port,
    'POST',
    '/api/v1/sqlite/query',
    { ...headers, host: `localhost:${a.port}` },
    {
      sql: 'SELECT id FROM log',
    },
  )) as { rows: { id: number }[] };
  const kept = new Set(rows.rows.map((r) => r.id));
  const before = acked.filter((x) => x.sentAt < lostAt);
  const lost = before.filter((x) => !kept.has(x.id));
  const missingAfter = after().filter((x) => !kept.has(x.id));
  if (missingAfter.length > 0)
    throw new Error(`${mode}: ${missingAfter.length} writes acknowledged after the failover are missing`);
  await b.stop();
  await a.kill();
  return {
    mode,
    rtoMs,
    ackedBefore: before.length,
    lost: lost.length,
    lostWindowMs: lost.length ? Math.round(lostAt - Math.min(...lost.map((x) => x.at))) : 0,
    writesPerSecond: before.length / (writeMs / 1000),
  };
}
