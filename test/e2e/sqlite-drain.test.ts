import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { jsonRequest } from '../support/hostplane.js';
import { createBucket } from '../support/minio.js';
import { createDatabase } from '../support/postgres.js';
import { exited } from '../support/procs.js';
import { bin, cli, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';
import { childPids, replicatedShardEnv } from '../support/litestream.js';

// Draining a shard moves its databases while clients keep writing: the owner stops writes, syncs
// its replica and lets go; the other shard restores the database from the replica, takes the
// lease and serves it. Two real shards (`hostplane serve`), real Litestream, MinIO, PostgreSQL.

describe('draining a SQLite shard', () => {
  const shards: Instance[] = [];
  let token = '';
  let origin = '';
  let apiKey = '';

  /** A call to shard `i` (it forwards to the owner when the database is elsewhere). */
  const scoped = async (i: number, route: string, json?: unknown, withToken = token) => {
    const shard = shards[i]!;
    const { res, body } = await jsonRequest(shard.port, `/api/v1/sqlite/${route}`, {
      method: json === undefined ? 'GET' : 'POST',
      host: `localhost:${shards[0]!.port}`, // one public API host for both, as behind a proxy
      headers: { 'x-sqlite-token': withToken, origin },
      json,
    });
    return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
  };
  const files = async (i: number) =>
    (await readdir(path.join(shards[i]!.dataDir, 'sqlite')).catch(() => [])).filter((f) =>
      /^\d+\.sqlite$/.test(f),
    );

  beforeAll(async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    const s3 = inject('s3');
    const [databaseUrl, bucket] = await Promise.all([
      createDatabase(inject('postgresUrl')),
      createBucket(s3),
    ]);
    for (const name of ['drain-a', 'drain-b']) {
      const shard = await newInstance(replicatedShardEnv(s3, databaseUrl, bucket, name));
      shard.env.HOSTPLANE_SQLITE_SHARD_URL = `http://127.0.0.1:${shard.port}`;
      shards.push(shard);
    }
    shards[1]!.env.HOSTPLANE_BASE_URL = shards[0]!.env.HOSTPLANE_BASE_URL;
    await startServe(shards[0]!); // the only shard: the database is placed on it
    const created = await cli(shards[0]!, [
      'admin',
      'create-site',
      '--slug',
      'moving',
      '--email',
      'm@example.com',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    origin = `http://moving.localhost:${shards[0]!.port}`;
    const { res, body } = await jsonRequest(shards[0]!.port, '/api/v1/sqlite/auth/install', {
      host: `localhost:${shards[0]!.port}`,
      headers: { 'x-api-key': apiKey },
      json: { path: 'moving.sqlite', name: 'm', requireUserAuth: false },
    });
    expect(res.status, JSON.stringify(body)).toBe(200);
    token = body.token as string;
    expect((await scoped(0, 'exec', { sql: 'CREATE TABLE log (id INTEGER PRIMARY KEY)' })).status).toBe(200);
    await startServe(shards[1]!);
  }, 90_000);

  afterAll(async () => {
    for (const shard of shards) {
      const server = shard.server;
      if (server && server.exitCode === null) {
        const children = childPids(server.pid!);
        server.kill('SIGKILL');
        await exited(server);
        for (const pid of children) process.kill(pid, 'SIGKILL');
      }
      await rm(shard.dataDir, { recursive: true, force: true });
    }
  });

  it('moves the database to the other shard under writes: nothing acknowledged is lost', async () => {
    expect(await files(0)).toHaveLength(1);
    expect(await files(1)).toHaveLength(0);
    // A client writing through shard b (it forwards to the owner), retrying a 503 as told to.
    const stop = { now: false };
    const acked: number[] = [];
    const refusals: { status: number; retryAfter: string | null; body: unknown }[] = [];
    const writing = (async () => {
      for (let id = 1; !stop.now;) {
        const res = await scoped(1, 'exec', { sql: 'INSERT INTO log (id) VALUES (?)', params: [id] }).catch(
          (err: unknown) => ({ status: 0, retryAfter: null, body: { error: String(err) } }),
        );
        if (res.status === 200) acked.push(id++);
        else {
          refusals.push({ status: res.status, retryAfter: res.retryAfter, body: res.body });
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    })();
    await eventually('writes under way', () => acked.length >= 50).catch((err: unknown) => {
      throw new Error(`${String(err)}: ${JSON.stringify(refusals.slice(0, 3))}`);
    });

    const drained = await cli(shards[0]!, ['admin', 'drain-shard', '--shard', 'drain-a', '--json']);
    expect(drained.code, drained.stderr).toBe(0);
    const result = JSON.parse(drained.stdout) as {
      moved: { databaseId: number; to: string }[];
      left: unknown[];
    };
    expect(result.moved).toEqual([{ databaseId: expect.any(Number), to: 'drain-b' }]);
    expect(result.left).toEqual([]);

    // The owner let go (file removed), the new shard restored it and serves the writes.
    await eventually(
      'the file moved to shard b',
      async () => (await files(0)).length === 0 && (await files(1)).length === 1,
      60_000,
    );
    const movedAt = acked.length;
    await eventually('writes served by shard b', () => acked.length >= movedAt + 50, 60_000);
    stop.now = true;
    await writing;

    // Every refusal during the switch was a 503 with Retry-After, never a 500 or a lost write.
    expect(refusals.every((r) => r.status === 503 && r.retryAfter !== null)).toBe(true);
    const rows = await scoped(0, 'query', { sql: 'SELECT id FROM log ORDER BY id' });
    expect(rows.status).toBe(200);
    expect((rows.body.rows as { id: number }[]).map((r) => r.id)).toEqual(acked);
  }, 180_000);

  it('a shard that was down while its database moved away never serves its stale copy', async () => {
    const a = shards[0]!;
    const insert = async (via: number, id: number) =>
      (await scoped(via, 'exec', { sql: 'INSERT INTO log (id) VALUES (?)', params: [id] })).status;
    const ids = async (via: number) =>
      (
        (await scoped(via, 'query', { sql: 'SELECT id FROM log ORDER BY id' })).body.rows as { id: number }[]
      ).map((r) => r.id);
    const kill = async (shard: Instance) => {
      const server = shard.server!;
      const children = childPids(server.pid!);
      server.kill('SIGKILL');
      await exited(server);
      for (const pid of children) process.kill(pid, 'SIGKILL');
    };
    const b = shards[1]!;
    const drain = async (from: string, to: string) => {
      const moved = await cli(a.server?.exitCode === null ? a : b, [
        'admin',
        'drain-shard',
        '--shard',
        from,
        '--to',
        to,
        '--json',
      ]);
      expect(moved.code, moved.stderr).toBe(0);
    };
    // a starts again (a start ends its drain) and takes the database back; b is drained by it.
    await kill(a);
    await startServe(a);
    await drain('drain-b', 'drain-a');
    const base = (await ids(1)).at(-1) ?? 0;
    await eventually('a serves it', async () => (await insert(1, base + 1)) === 200, 60_000);
    expect(await files(0)).toHaveLength(1);
    await stopServe(b); // its drain ends with a start
    await startServe(b);

    // a dies with its copy on disk; the database moves to b, which takes the lease once a's has
    // run out, and gets more writes.
    await kill(a);
    await drain('drain-a', 'drain-b');
    await eventually(
      'b serves it after a’s lease ran out',
      async () => (await insert(1, base + 2)) === 200,
      90_000,
    );
    for (let id = base + 3; id <= base + 10; id++) expect(await insert(1, id)).toBe(200);
    const onB = await ids(1);
    expect(onB.slice(-9)).toEqual(Array.from({ length: 9 }, (_, i) => base + 2 + i));

    // a comes back with its old copy, and the database is moved to it again: served as b left it.
    await startServe(a);
    await drain('drain-b', 'drain-a');
    await eventually(
      'a serves it again',
      async () => (await scoped(0, 'version')).status === 200 && (await files(0)).length === 1,
      60_000,
    );
    expect(await ids(0)).toEqual(onB);
  }, 240_000);
});
