import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { jsonRequest } from '../support/hostplane.js';
import { createBucket } from '../support/minio.js';
import { createDatabase } from '../support/postgres.js';
import { exited } from '../support/procs.js';
import { bin, cli, newInstance, startServe, type Instance } from '../support/cli.js';
import { childPids, replicatedShardEnv } from '../support/litestream.js';

// The failover of a lost shard, without a person: two real shards (`hostplane serve`) with real
// Litestream children, MinIO and PostgreSQL, under a steady write load through the live shard.
// Shard a is frozen (SIGSTOP, it and its Litestream: as gone as a kill -9, nothing ships) and its
// databases answer from b once a's leases ran out; then a comes back (SIGCONT) with its stale copy
// and its Litestream's unshipped tail, and serves none of them; then b stops gracefully and its
// databases move back to a with every acknowledged write. Each step waits for what it can observe.

/** The lease TTL (30 s) decides when a silent shard's databases may move; a poll and a restore follow. */
const RTO_BOUND_MS = 45_000;
/** Litestream ships about every second; a write acknowledged earlier than this before the loss is kept. */
const RPO_BOUND_MS = 2_000;

describe('failover of a lost SQLite shard', () => {
  const shards: Instance[] = [];
  let token = '';
  let otherToken = '';
  let origin = '';
  let databaseUrl = '';
  /** Acknowledged writes: sent at `sentAt`, answered 200 at `at`. */
  const acked: { id: number; sentAt: number; at: number }[] = [];

  const scoped = async (i: number, route: string, json?: unknown, withToken = token) => {
    const { res, body } = await jsonRequest(shards[i]!.port, `/api/v1/sqlite/${route}`, {
      method: json === undefined ? 'GET' : 'POST',
      host: `localhost:${shards[0]!.port}`, // one public API host for both, as behind a proxy
      headers: { 'x-sqlite-token': withToken, origin },
      json,
    });
    return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
  };
  const ids = async (via: number) => {
    const res = await scoped(via, 'query', { sql: 'SELECT id FROM log ORDER BY id' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.rows as { id: number }[]).map((r) => r.id);
  };
  const files = async (i: number) =>
    (await readdir(path.join(shards[i]!.dataDir, 'sqlite')).catch(() => [])).filter((f) =>
      /^\d+\.sqlite$/.test(f),
    );
  const rows = async () => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const result = await client.query<{
        id: number;
        path: string;
        shard: string;
        replica_generation: number;
      }>('select id, path, shard, replica_generation from sqlite_databases order by id');
      return result.rows;
    } finally {
      await client.end();
    }
  };
  const signal = (i: number, sig: NodeJS.Signals) => {
    const server = shards[i]!.server!;
    const children = childPids(server.pid!);
    server.kill(sig);
    for (const pid of children) process.kill(pid, sig);
  };

  /** Writes through shard `via` until stopped, retrying refusals; every acknowledged id is kept. */
  function writer(via: () => number, from = 1) {
    const state = { stop: false, refusals: [] as { status: number; at: number }[], next: from };
    const done = (async () => {
      while (!state.stop) {
        const id = state.next;
        const sentAt = Date.now();
        const res = await scoped(via(), 'exec', {
          sql: 'INSERT INTO log (id) VALUES (?)',
          params: [id],
        }).catch(() => ({ status: 0, body: {}, retryAfter: null }));
        if (res.status === 200) {
          acked.push({ id, sentAt, at: Date.now() });
          state.next++;
        } else {
          state.refusals.push({ status: res.status, at: Date.now() });
          // A write refused might still have been applied by a shard that then went away: the
          // next try uses a new id, so a retried one is never counted as acknowledged twice.
          state.next++;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    })();
    return Object.assign(state, { done });
  }

  beforeAll(async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    const s3 = inject('s3');
    let bucket: string;
    [databaseUrl, bucket] = await Promise.all([createDatabase(inject('postgresUrl')), createBucket(s3)]);
    for (const name of ['fail-a', 'fail-b']) {
      const shard = await newInstance(replicatedShardEnv(s3, databaseUrl, bucket, name));
      shard.env.HOSTPLANE_SQLITE_SHARD_URL = `http://127.0.0.1:${shard.port}`;
      shards.push(shard);
    }
    shards[1]!.env.HOSTPLANE_BASE_URL = shards[0]!.env.HOSTPLANE_BASE_URL;
    await startServe(shards[0]!); // the only shard: both databases are placed on it
    const created = await cli(shards[0]!, [
      'admin',
      'create-site',
      '--slug',
      'lost',
      '--email',
      'l@example.com',
      '--plan',
      'business',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    origin = `http://lost.localhost:${shards[0]!.port}`;
    const install = async (dbPath: string) => {
      const { res, body } = await jsonRequest(shards[0]!.port, '/api/v1/sqlite/auth/install', {
        host: `localhost:${shards[0]!.port}`,
        headers: { 'x-api-key': apiKey },
        json: { path: dbPath, name: 'f', requireUserAuth: false },
      });
      expect(res.status, JSON.stringify(body)).toBe(200);
      return body.token as string;
    };
    token = await install('one.sqlite');
    otherToken = await install('two.sqlite');
    expect((await scoped(0, 'exec', { sql: 'CREATE TABLE log (id INTEGER PRIMARY KEY)' })).status).toBe(200);
    expect((await scoped(0, 'exec', { sql: 'CREATE TABLE t (x)' }, otherToken)).status).toBe(200);
    await startServe(shards[1]!);
  }, 90_000);

  afterAll(async () => {
    for (const shard of shards) {
      const server = shard.server;
      if (server && server.exitCode === null) {
        const children = childPids(server.pid!);
        server.kill('SIGCONT');
        server.kill('SIGKILL');
        await exited(server);
        for (const pid of children) process.kill(pid, 'SIGKILL');
      }
      await rm(shard.dataDir, { recursive: true, force: true });
    }
  });

  it('a shard lost for good: its databases answer from the other within the bound, losing at most the sync interval', async () => {
    expect((await rows()).map((r) => r.shard)).toEqual(['fail-a', 'fail-a']);
    const load = writer(() => 1);
    // Seconds of writes, so that what a loss takes is measured against a history longer than it.
    const startedAt = Date.now();
    await eventually('writes under way', () => acked.length >= 200 && Date.now() - startedAt > 3_000, 30_000);

    const lostAt = Date.now();
    signal(0, 'SIGSTOP'); // a and its Litestream: nothing more is served or shipped
    // A write sent before the loss was answered by a before it froze (an answer may arrive later).
    const sentBefore = () => acked.filter((a) => a.sentAt < lostAt);
    const after = () => acked.filter((a) => a.sentAt > lostAt);
    await eventually('a write answered after the loss', () => after().length > 0, RTO_BOUND_MS + 15_000);
    const rtoMs = after()[0]!.at - lostAt;
    await eventually('more writes served by b', () => after().length >= 50, 30_000);
    load.stop = true;
    await load.done;

    // Both databases are placed on b now, moved once, to a new replica generation (taken over).
    const placed = await rows();
    expect(placed.map((r) => r.shard)).toEqual(['fail-b', 'fail-b']);
    expect(placed[0]!.replica_generation).toBe(1);
    const moves = shards[1]!.serverLog.join('').match(/sqlite database failed over/g) ?? [];
    expect(moves).toHaveLength(2);
    // The other database was opened by b at once, restored, before any call.
    await eventually('b holds both databases', async () => (await files(1)).length === 2, 10_000);
    expect((await scoped(1, 'query', { sql: 'SELECT count(*) AS n FROM t' }, otherToken)).status).toBe(200);

    // What was acknowledged before the loss and is gone: only a tail of at most the sync interval.
    const kept = new Set(await ids(1));
    const before = sentBefore().map((a) => a.id);
    const lost = before.filter((id) => !kept.has(id));
    const lostAcks = acked.filter((a) => lost.includes(a.id));
    const keptBefore = before.filter((id) => kept.has(id));
    if (lost.length > 0) expect(Math.min(...lost)).toBeGreaterThan(Math.max(...keptBefore)); // a tail, never a hole
    for (const a of lostAcks) expect(lostAt - a.at).toBeLessThan(RPO_BOUND_MS);
    // Every write acknowledged after the loss is there.
    for (const a of after()) expect(kept.has(a.id)).toBe(true);
    expect(rtoMs).toBeLessThan(RTO_BOUND_MS);
    // Refusals in between were 503 (with Retry-After), never a 500.
    expect(load.refusals.filter((r) => r.status !== 503)).toEqual([]);
    console.log(
      `failover after a kill: RTO ${rtoMs} ms; RPO ${lost.length} acknowledged writes lost of ${before.length}` +
        (lostAcks.length > 0
          ? ` (acknowledged ${lostAt - Math.min(...lostAcks.map((a) => a.at))} ms before the loss)`
          : ''),
    );
  }, 120_000);

  it('the lost shard comes back with its stale copy and serves none of it; its Litestream never writes the new generation', async () => {
    const onB = await ids(1);
    signal(0, 'SIGCONT'); // a wakes up: its timers, its open file, its Litestream with its tail
    // a lets its copies go (its leases were taken over) and forwards every call to b.
    await eventually('a removed its stale copies', async () => (await files(0)).length === 0, 30_000);
    const answers: { status: number; rows?: number[] }[] = [];
    await eventually(
      'a forwards to b',
      async () => {
        const res = await scoped(0, 'query', { sql: 'SELECT id FROM log ORDER BY id' });
        answers.push({
          status: res.status,
          rows: (res.body.rows as { id: number }[] | undefined)?.map((r) => r.id),
        });
        return res.status === 200;
      },
      30_000,
    );
    // Whatever a answered was b's data, never its stale copy; a write through a lands on b.
    for (const answer of answers.filter((a) => a.status === 200)) expect(answer.rows).toEqual(onB);
    const next = Math.max(...acked.map((a) => a.id)) + 1000;
    expect((await scoped(0, 'exec', { sql: 'INSERT INTO log (id) VALUES (?)', params: [next] })).status).toBe(
      200,
    );
    acked.push({ id: next, sentAt: Date.now(), at: Date.now() });
    expect((await ids(1)).at(-1)).toBe(next);
    expect((await rows()).map((r) => r.shard)).toEqual(['fail-b', 'fail-b']);
    expect(await files(0)).toEqual([]);
  }, 90_000);

  it('a shard stopped gracefully: its databases move after the bound with every acknowledged write', async () => {
    const before = acked.length;
    const held = await ids(1); // what b holds now (test 1's loss is behind it)
    // Through a now, after every id used so far (a refused write may still have landed).
    const load = writer(() => 0, Math.max(...(await ids(0))) + 1_000);
    await eventually('writes under way through a', () => acked.length >= before + 100, 30_000);
    const stoppedAt = Date.now();
    // To b alone, as a kubelet stops a pod (its PID 1): writes stopped, last sync, Litestream
    // stopped, leases released. (A SIGTERM to its Litestream too would fail the last sync: then b
    // keeps its leases, and a takes them over when they run out, without b's unsynced tail.)
    shards[1]!.server!.kill('SIGTERM');
    await exited(shards[1]!.server!);
    const goneAt = Date.now(); // b answered up to its exit: writes sent after it are a's
    const after = () => acked.filter((a) => a.sentAt > goneAt);
    await eventually('a write answered after the stop', () => after().length > 0, RTO_BOUND_MS);
    const rtoMs = after()[0]!.at - stoppedAt;
    load.stop = true;
    await load.done;
    expect((await rows()).map((r) => r.shard)).toEqual(['fail-a', 'fail-a']);
    // Restored by a from the generation b replicated (a's late Litestream never wrote into it).
    const kept = new Set(await ids(0));
    const missing = acked.slice(before).filter((a) => !kept.has(a.id));
    if (missing.length > 0 && process.env.DEBUG_FAILOVER) {
      console.log(
        `stoppedAt ${stoppedAt}; missing ${missing.length} from ${missing[0]!.at - stoppedAt} to ${missing.at(-1)!.at - stoppedAt} ms; acked after stop ${after().length}`,
      );
      console.log(
        [...shards[0]!.serverLog.map((l) => `A ${l}`), ...shards[1]!.serverLog.map((l) => `B ${l}`)]
          .join('')
          .split('\n')
          .filter((l) => !/HopFailed|hop to the owning|request completed/.test(l))
          .join('\n'),
      );
    }
    expect(missing).toEqual([]);
    expect(held.filter((id) => !kept.has(id))).toEqual([]);
    expect(load.refusals.filter((r) => r.status !== 503)).toEqual([]);
    console.log(
      `failover after a graceful stop: RTO ${rtoMs} ms; RPO 0 of ${acked.length} acknowledged writes`,
    );
    if (process.env.DEBUG_FAILOVER)
      console.log(
        [...shards[0]!.serverLog, ...shards[1]!.serverLog]
          .join('')
          .split('\n')
          .filter((l) => /failed over|last sync|keep their leases|let go|stopp/.test(l))
          .join('\n'),
      );
  }, 90_000);
});
