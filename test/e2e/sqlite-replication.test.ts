import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { createBucket } from '../support/minio.js';
import { createDatabase } from '../support/postgres.js';
import { exited } from '../support/procs.js';
import { bin, cli, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';
import { jsonRequest } from '../support/hostplane.js';
import { childPids, replicatedShardEnv } from '../support/litestream.js';

// A standalone shard (`hostplane serve`, the built binary) replicating its databases to MinIO with
// a real Litestream child: restore on start into an empty data dir, the graceful stop that loses
// nothing, and the measured loss of a kill -9 at Litestream's default sync interval.

describe('a shard replicating its databases with Litestream', () => {
  let instance: Instance;
  let token = '';
  let origin = '';
  let apiKey = '';
  let databaseUrl = '';

  const call = async (route: string, headers: Record<string, string>, json?: unknown) => {
    const { res, body } = await jsonRequest(instance.port, `/api/v1/sqlite/${route}`, {
      method: json === undefined ? 'GET' : 'POST',
      host: `localhost:${instance.port}`,
      headers,
      json,
    });
    return { status: res.status, body };
  };
  const scoped = (route: string, json?: unknown) => call(route, { 'x-sqlite-token': token, origin }, json);
  const count = async () => {
    const res = await scoped('query', { sql: 'SELECT count(*) AS n, max(id) AS last FROM log' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.rows as { n: number; last: number | null }[])[0]!;
  };
  const ids = async () => {
    const res = await scoped('query', { sql: 'SELECT id FROM log ORDER BY id' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.rows as { id: number }[]).map((r) => r.id);
  };
  const sqliteDir = () => path.join(instance.dataDir, 'sqlite');
  const wipeDatabases = async () => {
    for (const name of await readdir(sqliteDir()).catch(() => []))
      if (name !== 'litestream.yml') await rm(path.join(sqliteDir(), name), { recursive: true, force: true });
  };

  /** Writes one row per call until `stop` is set; returns the ids whose write was acknowledged, with when. */
  async function writeContinuously(stop: { now: boolean }, from: number) {
    const acked: { id: number; at: number }[] = [];
    for (let id = from; !stop.now; id++) {
      const res = await scoped('exec', {
        sql: 'INSERT INTO log (id, at) VALUES (?, ?)',
        params: [id, Date.now()],
      }).catch(() => undefined);
      if (res?.status === 200) acked.push({ id, at: Date.now() });
      else break; // the shard went away
    }
    return acked;
  }

  beforeAll(async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    const s3 = inject('s3');
    let bucket: string;
    [databaseUrl, bucket] = await Promise.all([createDatabase(inject('postgresUrl')), createBucket(s3)]);
    instance = await newInstance(replicatedShardEnv(s3, databaseUrl, bucket, 'replicated-a'));
    await startServe(instance);
    const created = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'durable',
      '--email',
      'd@example.com',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    origin = `http://durable.localhost:${instance.port}`;
    const install = await call(
      'auth/install',
      { 'x-api-key': apiKey },
      { path: 'app.sqlite', name: 'app', requireUserAuth: false },
    );
    expect(install.status, JSON.stringify(install.body)).toBe(200);
    token = install.body.token as string;
    const table = await scoped('exec', {
      sql: 'CREATE TABLE log (id INTEGER PRIMARY KEY, at INTEGER NOT NULL)',
    });
    expect(table.status, JSON.stringify(table.body)).toBe(200);
  }, 60_000);

  afterAll(async () => {
    if (process.env.DEBUG_SERVE_LOG)
      (await import('node:fs')).writeFileSync(process.env.DEBUG_SERVE_LOG, instance.serverLog.join(''));
    const server = instance?.server;
    if (server && server.exitCode === null) {
      const children = childPids(server.pid!);
      server.kill('SIGKILL');
      await exited(server);
      for (const pid of children) process.kill(pid, 'SIGKILL');
    }
    if (instance) await rm(instance.dataDir, { recursive: true, force: true });
  });

  it('reports each database to PostgreSQL: replicating, in step, its version, size and earliest restore point', async () => {
    const { n } = await count();
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const row = await eventually(
        'the shard reported the database',
        async () => {
          const { rows } = await client.query<{
            replication_state: string;
            replicated_at: Date | null;
            restorable_from: Date | null;
            version: string;
            size_bytes: string;
          }>(
            'select replication_state, replicated_at, restorable_from, version, size_bytes from sqlite_databases',
          );
          const r = rows[0];
          return r && r.replicated_at && r.restorable_from && Number(r.version) >= n + 1 ? r : undefined;
        },
        30_000,
      );
      expect(row.replication_state).toBe('replicating');
      expect(Number(row.size_bytes)).toBeGreaterThan(0);
      expect(row.restorable_from!.getTime()).toBeLessThanOrEqual(row.replicated_at!.getTime());
    } finally {
      await client.end();
    }
  }, 60_000);

  it("keeps Litestream's own tables reserved and out of /schema, and tenant writes still work beside them", async () => {
    const schema = await scoped('schema');
    expect(schema.status).toBe(200);
    const names = (schema.body.tables as { name: string }[]).map((t) => t.name);
    expect(names).toEqual(['log']);
    const write = await scoped('exec', { sql: 'DELETE FROM _litestream_seq' });
    expect(write.status, JSON.stringify(write.body)).toBe(400);
    expect(write.body.code).toBe('SQLITE_AUTH');
    const read = await scoped('query', { sql: 'SELECT * FROM _litestream_lock' });
    expect(read.status).toBe(400);
  });

  it('loses nothing on SIGTERM: every acknowledged write is restored into an empty data dir', async () => {
    const stop = { now: false };
    const writing = writeContinuously(stop, 1);
    await eventually('writes under way', async () => (await count()).n >= 50);
    const stopped = stopServe(instance); // SIGTERM while writes are in flight
    const code = await stopped;
    stop.now = true;
    const acked = await writing;
    expect(code).toBe(0);
    expect(acked.length).toBeGreaterThanOrEqual(50);
    await wipeDatabases(); // the volume is gone: only the replica is left
    expect(await readdir(sqliteDir())).not.toContain('1.sqlite');
    await startServe(instance);
    const survived = new Set(await ids());
    const lost = acked.filter((w) => !survived.has(w.id));
    expect(lost).toEqual([]);
  }, 120_000);

  it('restores on start before serving: readiness waits for it and the file is back', async () => {
    const before = await count();
    await stopServe(instance);
    await wipeDatabases();
    await startServe(instance); // /readyz answers 200 only after the placed databases are open
    const files = await readdir(sqliteDir());
    expect(files.filter((f) => /^\d+\.sqlite$/.test(f))).toHaveLength(1);
    expect(await count()).toEqual(before);
  }, 120_000);

  it('measures the loss of a kill -9 at the default sync interval: acknowledged writes survive as a prefix', async () => {
    const { last } = await count();
    const stop = { now: false };
    const writing = writeContinuously(stop, (last ?? 0) + 1);
    // Long enough for Litestream's one-second syncs to ship several times.
    const startedAt = Date.now();
    await eventually('five seconds of writes', () => Date.now() - startedAt >= 5_000, 60_000);
    const server = instance.server!;
    const children = childPids(server.pid!);
    const killedAt = Date.now();
    // The pod is gone: the shard and its Litestream with it, and then its volume.
    server.kill('SIGKILL');
    for (const pid of children) process.kill(pid, 'SIGKILL');
    await exited(server);
    stop.now = true;
    const acked = await writing;
    await wipeDatabases();
    await startServe(instance);
    const survived = new Set(await ids());
    const kept = acked.filter((w) => survived.has(w.id));
    const lost = acked.filter((w) => !survived.has(w.id));
    // Whatever was lost is the tail: no acknowledged write is missing before one that survived.
    const lastKept = kept.at(-1);
    expect(lost.every((w) => !lastKept || w.id > lastKept.id)).toBe(true);
    const rpoSeconds = lost.length > 0 && lastKept ? (lost.at(-1)!.at - lastKept.at) / 1000 : 0;
    console.info(
      `kill -9 durability: ${acked.length} writes acknowledged, ${lost.length} lost, RPO ${rpoSeconds.toFixed(2)} s ` +
        `(last acknowledged write ${(killedAt - (acked.at(-1)?.at ?? killedAt)) / 1000} s before the kill)`,
    );
    // Litestream ships the WAL every second; ten times that is a loss no one would accept.
    expect(acked.filter((w) => w.at < killedAt - 10_000 && !survived.has(w.id))).toEqual([]);
  }, 180_000);
});
