import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { createBucket } from '../support/minio.js';
import { createDatabase } from '../support/postgres.js';
import { exited } from '../support/procs.js';
import { bin, cli, newInstance, startServe, type Instance } from '../support/cli.js';
import { jsonRequest } from '../support/hostplane.js';
import { childPids, requireLitestream } from '../support/litestream.js';

// Point-in-time restore through the API, on real `hostplane serve` shards replicating to MinIO
// with a real Litestream each: the database is placed on shard A, and the master-key calls go to
// shard B, which forwards them to A (the body it read sent on), as an API pod would.

interface Window {
  earliest: string | null;
  latest: string | null;
  retentionHours: number;
}

describe('point-in-time restore of a SQLite database', () => {
  let owner: Instance; // shard A: holds the database
  let other: Instance; // shard B: forwards to A
  let token = '';
  let origin = '';
  let apiKey = '';
  const DB = 'data/app.sqlite';

  const request = (instance: Instance, route: string, headers: Record<string, string>, json?: unknown) =>
    jsonRequest(instance.port, `/api/v1/sqlite/${route}`, {
      method: json === undefined ? 'GET' : 'POST',
      host: `localhost:${instance.port}`,
      headers,
      json,
    }).then(({ res, body }) => ({ status: res.status, headers: res.headers, body }));
  const scoped = (route: string, json?: unknown) =>
    request(owner, route, { 'x-sqlite-token': token, origin }, json);
  const master = (route: string, json?: unknown) => request(other, route, { 'x-api-key': apiKey }, json);
  const window = async (): Promise<Window> => {
    const res = await master(`restore-window?path=${encodeURIComponent(DB)}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.path).toBe(DB);
    return res.body as unknown as Window;
  };
  const notes = async () => {
    const res = await scoped('query', { sql: 'SELECT note FROM notes ORDER BY id' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.rows as { note: string }[]).map((r) => r.note);
  };
  const version = async () => {
    const res = await scoped('version');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.version as number;
  };
  const write = async (notes: string[]) => {
    for (const note of notes) {
      const res = await scoped('exec', { sql: 'INSERT INTO notes (note) VALUES (?)', params: [note] });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
  };

  beforeAll(async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    const s3 = inject('s3');
    const [databaseUrl, bucket] = await Promise.all([
      createDatabase(inject('postgresUrl')),
      createBucket(s3),
    ]);
    const env = (name: string) => ({
      DATABASE_URL: databaseUrl,
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_REGION: s3.region,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      HOSTPLANE_SITES_DOMAIN: 'localhost',
      HOSTPLANE_SQLITE_SHARD_NAME: name,
      HOSTPLANE_SQLITE_REPLICATION: 'required',
      HOSTPLANE_LITESTREAM_BIN: requireLitestream(),
      LOG_LEVEL: 'info',
    });
    owner = await newInstance(env('pitr-a'));
    await startServe(owner);
    const created = await cli(owner, [
      'admin',
      'create-site',
      '--slug',
      'timetravel',
      '--email',
      't@example.com',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    origin = `http://timetravel.localhost:${owner.port}`;
    const install = await request(
      owner,
      'auth/install',
      { 'x-api-key': apiKey },
      { path: DB, name: 'app', requireUserAuth: false },
    );
    expect(install.status, JSON.stringify(install.body)).toBe(200);
    token = install.body.token as string;
    // The first call places the database on A (the only shard yet) and opens it there.
    const table = await scoped('exec', {
      sql: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, note TEXT NOT NULL)',
    });
    expect(table.status, JSON.stringify(table.body)).toBe(200);
    other = await newInstance(env('pitr-b'));
    await startServe(other);
  }, 90_000);

  afterAll(async () => {
    for (const instance of [other, owner]) {
      const server = instance?.server;
      if (server && server.exitCode === null) {
        const children = childPids(server.pid!);
        server.kill('SIGKILL');
        await exited(server);
        for (const pid of children) process.kill(pid, 'SIGKILL');
      }
      if (instance) await rm(instance.dataDir, { recursive: true, force: true });
    }
  });

  let restoredAt = 0;
  let bookmark = '';
  let versionAfterPhase2 = 0;

  it('answers the restore window of a replicated database', async () => {
    const w = await eventually('a restore point', async () => {
      const found = await window();
      return found.earliest !== null && found;
    });
    expect(w.retentionHours).toBe(168);
    expect(Date.parse(w.latest!)).toBeGreaterThanOrEqual(Date.parse(w.earliest!) - 1000);
    expect(Date.parse(w.earliest!)).toBeLessThanOrEqual(Date.now() + 1000);
  }, 60_000);

  it('restores to a time between two phases of writes: only the first phase is left, the version goes up', async () => {
    const w = await window();
    // Phase 1 after the earliest restore point, so a time after it is in the window.
    await eventually('the clock past the earliest restore point', () => Date.now() > Date.parse(w.earliest!));
    await write(['one', 'two', 'three']);
    await window(); // ships phase 1 to the replica before it answers
    const between = new Date();
    await eventually('the clock past the chosen time', () => Date.now() > between.getTime() + 5);
    await write(['four', 'five']);
    expect(await notes()).toEqual(['one', 'two', 'three', 'four', 'five']);
    versionAfterPhase2 = await version();

    // Reads while it runs: each one answered 200 (before or after the swap) or 503 with Retry-After.
    const reading = { stop: false, answers: [] as { status: number; retryAfter: string | null }[] };
    const reads = (async () => {
      while (!reading.stop) {
        const res = await scoped('query', { sql: 'SELECT count(*) AS n FROM notes' });
        reading.answers.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
      }
    })();
    const res = await master('restore', { path: DB, timestamp: between.toISOString() });
    reading.stop = true;
    await reads;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ success: true, path: DB, restoredTo: between.toISOString() });
    expect(res.body.version).toBe(versionAfterPhase2 + 1);
    expect(typeof res.body.previousBookmark).toBe('string');
    bookmark = res.body.previousBookmark as string;
    restoredAt = Date.now();

    expect(await notes()).toEqual(['one', 'two', 'three']);
    expect(await version()).toBe(versionAfterPhase2 + 1);
    const logged = owner.serverLog.join('').match(/"swapMs":(\d+)/);
    console.info(
      `point-in-time restore: swap ${logged?.[1] ?? '?'} ms under the write lock; ` +
        `${reading.answers.filter((a) => a.status === 503).length} of ${reading.answers.length} reads meanwhile got 503`,
    );
    for (const answer of reading.answers) {
      expect([200, 503]).toContain(answer.status);
      if (answer.status === 503) expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    }
    // Writes go on from the restored state, and the version keeps going up.
    await write(['six']);
    expect(await notes()).toEqual(['one', 'two', 'three', 'six']);
    expect(await version()).toBe(versionAfterPhase2 + 2);
  }, 120_000);

  it('starts a new history: the window begins at the restore', async () => {
    const w = await eventually('a restore point of the new generation', async () => {
      const found = await window();
      return found.earliest !== null && found;
    });
    expect(Date.parse(w.earliest!)).toBeGreaterThanOrEqual(restoredAt - 10_000);
    const before = new Date(restoredAt - 60_000).toISOString();
    const res = await master('restore', { path: DB, timestamp: before });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.earliest).toBe(w.earliest);
    expect(res.body.message).toContain(before);
    expect(res.body.message).toContain(w.earliest!);
  }, 60_000);

  it('undoes the restore with its bookmark: the second phase is back', async () => {
    const [payload, signature] = bookmark.split('.') as [string, string];
    const tampered = `${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    const refused = await master('restore', { path: DB, bookmark: tampered });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    const versionBefore = await version();
    const res = await master('restore', { path: DB, bookmark });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.version).toBe(versionBefore + 1);
    expect(Date.parse(res.body.restoredTo as string)).toBeLessThanOrEqual(restoredAt);
    expect(await notes()).toEqual(['one', 'two', 'three', 'four', 'five']);
    expect(await version()).toBe(versionBefore + 1);
    // And the undo can be undone: back to the restored state with the write after it.
    const again = await master('restore', { path: DB, bookmark: res.body.previousBookmark });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await notes()).toEqual(['one', 'two', 'three', 'six']);
  }, 120_000);

  it('refuses bad input with a clear 4xx, and anything but the master key', async () => {
    const cases: [string, unknown, number][] = [
      ['restore-window', undefined, 400], // no path
      [`restore-window?path=${encodeURIComponent('data/none.sqlite')}`, undefined, 404],
      [`restore-window?path=${encodeURIComponent('data/app.txt')}`, undefined, 400],
      ['restore', { timestamp: new Date().toISOString() }, 400],
      ['restore', { path: 'data/none.sqlite', timestamp: new Date().toISOString() }, 404],
      ['restore', { path: DB }, 400],
      ['restore', { path: DB, timestamp: 'yesterday' }, 400],
      ['restore', { path: DB, timestamp: '2001-01-01T00:00:00Z' }, 400],
      ['restore', { path: DB, timestamp: new Date(Date.now() + 3_600_000).toISOString() }, 400],
      ['restore', { path: DB, timestamp: new Date().toISOString(), bookmark }, 400],
      ['restore', { path: DB, bookmark: 'not-a-bookmark' }, 400],
      [
        'restore',
        { path: DB, bookmark: `${Buffer.from('{"v":1,"d":1,"g":0,"t":"x"}').toString('base64url')}.AAAA` },
        400,
      ],
    ];
    for (const [route, json, status] of cases) {
      const res = await master(route, json);
      expect(res.status, `${route} ${JSON.stringify(json)}: ${JSON.stringify(res.body)}`).toBe(status);
      expect(typeof res.body.message).toBe('string');
    }
    const outside = await master('restore', { path: DB, timestamp: '2001-01-01T00:00:00Z' });
    expect(outside.body.message).toMatch(/outside this database's restore window: from \S+ to now/);

    // A scoped token (read or write) is not the master key.
    const read = await request(
      owner,
      'auth/install',
      { 'x-api-key': apiKey },
      {
        path: DB,
        name: 'reader',
        permissions: 'read',
        requireUserAuth: false,
      },
    );
    expect(read.status).toBe(200);
    for (const credentials of <Record<string, string>[]>[
      { 'x-sqlite-token': read.body.token as string, origin },
      { 'x-sqlite-token': token, origin },
      {},
    ]) {
      const windowCall = await request(other, `restore-window?path=${encodeURIComponent(DB)}`, credentials);
      expect(windowCall.status).toBe(401);
      const restoreCall = await request(other, 'restore', credentials, {
        path: DB,
        timestamp: new Date().toISOString(),
      });
      expect(restoreCall.status).toBe(401);
    }
    expect(await notes()).toEqual(['one', 'two', 'three', 'six']);
    // All of it was done by the owner (A); B only forwarded the calls.
    expect(existsSync(path.join(owner.dataDir, 'sqlite', '1.sqlite'))).toBe(true);
    expect(existsSync(path.join(other.dataDir, 'sqlite', '1.sqlite'))).toBe(false);
  }, 60_000);
});
