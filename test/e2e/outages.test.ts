import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, cli, newInstance, startServe, type Instance } from '../support/cli.js';
import { eventually } from '../support/eventually.js';
import { jsonRequest, rawRequest } from '../support/hostplane.js';
import { startMinio, type MinioServer } from '../support/minio.js';
import { createDatabase, startPostgres, type PostgresServer } from '../support/postgres.js';
import { exited } from '../support/procs.js';

// Issue 16, "Faults": two `hostplane serve` processes (the built binary) on their own PostgreSQL
// and MinIO (private to this file: they are stopped and killed here) under a small mixed load of
// uploads, form submissions and SQLite inserts. Stopping a dependency must be a 503 with
// Retry-After and the registry's body on every route and replica, never a 500 or an exit;
// writes succeed again soon after it is back, and none that was acknowledged is lost.

type Kind = 'upload' | 'submit' | 'sqlite';
const kinds: Kind[] = ['upload', 'submit', 'sqlite'];

interface Outcome {
  kind: Kind;
  replica: number;
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

describe('a dependency outage under load: 503, never a crash', () => {
  let postgres: PostgresServer;
  let minio: MinioServer;
  let databaseUrl = '';
  const replicas: Instance[] = [];
  const extra: Instance[] = [];
  let apiKey = '';
  let origin = '';
  let token = '';
  let formUuid = '';
  let seq = 0;
  /** What each replica acknowledged, by kind: the unique value written. */
  const acked: Record<Kind, string[]> = { upload: [], submit: [], sqlite: [] };

  const request = async (replica: number, path: string, headers: Record<string, string>, json?: unknown) => {
    const { res, body } = await jsonRequest(replicas[replica]!.port, path, {
      host: `localhost:${replicas[0]!.port}`,
      headers,
      json,
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
  };

  /** One write of `kind` through `replica`; an acknowledged one is remembered. */
  async function write(kind: Kind, replica: number): Promise<Outcome> {
    const n = ++seq;
    const value = `${kind}-${n}`;
    let res: Awaited<ReturnType<typeof request>>;
    if (kind === 'upload') {
      res = await request(
        replica,
        '/api/v1/files/upload',
        { 'x-api-key': apiKey },
        { path: `load/${value}.txt`, content: value },
      );
    } else if (kind === 'submit') {
      res = await request(
        replica,
        `/f/${formUuid}`,
        { 'x-forwarded-for': `198.51.${(n >> 8) % 250}.${(n % 250) + 1}` },
        {
          name: 'Load',
          email: 'load@example.com',
          message: value,
          _t_trap: '',
          _t_start: Math.floor(Date.now() / 1000) - 10,
        },
      );
    } else {
      res = await request(
        replica,
        '/api/v1/sqlite/exec',
        { 'x-sqlite-token': token, origin },
        { sql: 'INSERT INTO load (v) VALUES (?)', params: [value] },
      );
    }
    if (res.status === 200 || res.status === 201) acked[kind].push(value);
    return { kind, replica, ...res };
  }

  /** Three clients writing in turn (every kind, both replicas) until `stop` resolves. */
  async function load(stop: Promise<unknown>): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    let done = false;
    void stop.then(() => (done = true));
    await Promise.all(
      [0, 1, 2].map(async (client) => {
        for (let i = client; !done; i++) {
          outcomes.push(await write(kinds[i % 3]!, i % 2));
        }
      }),
    );
    return outcomes;
  }

  /** Every answer is a success or the registry's 503 with Retry-After; the outage was seen. */
  function expectOnlyOutage503s(outcomes: Outcome[], mustFail: Kind[]) {
    for (const outcome of outcomes) {
      const what = `${outcome.kind} via replica ${outcome.replica}: ${outcome.status} ${JSON.stringify(outcome.body)}`;
      expect([200, 201, 503], what).toContain(outcome.status);
      if (outcome.status !== 503) continue;
      expect(outcome.retryAfter, what).toMatch(/^[1-9]\d*$/);
      expect(outcome.body, what).toEqual({
        error: 'Service Unavailable',
        message: expect.any(String),
        retry_after: Number(outcome.retryAfter),
      });
    }
    for (const kind of mustFail) {
      expect(
        outcomes.some((o) => o.kind === kind && o.status === 503),
        `${kind} refused with 503 during the outage`,
      ).toBe(true);
    }
  }

  const ready = async (instance: Instance) =>
    (await rawRequest(instance.port, '/readyz', {}).catch(() => undefined))?.status;
  const alive = () => {
    for (const [i, r] of replicas.entries()) {
      expect(r.server?.exitCode, `replica ${i} exited:\n${r.serverLog.join('').slice(-3000)}`).toBeNull();
      expect(r.server?.signalCode).toBeNull();
    }
  };
  /** Each kind succeeds again on both replicas. */
  const recovered = (within: number) =>
    eventually(
      'writes succeeding again on both replicas',
      async () => {
        for (const kind of kinds)
          for (const replica of [0, 1]) {
            const res = await write(kind, replica);
            if (res.status !== 200 && res.status !== 201) return false;
          }
        return true;
      },
      within,
    );

  beforeAll(async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    [postgres, minio] = await Promise.all([startPostgres({ durable: true }), startMinio()]);
    databaseUrl = await createDatabase(postgres.url);
    const env = (name: string) => ({
      DATABASE_URL: databaseUrl,
      S3_ENDPOINT: minio.endpoint,
      // A fresh bucket: both replicas start at once and each ensures it exists.
      S3_BUCKET: 'outages',
      S3_REGION: minio.region,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: minio.accessKeyId,
      AWS_SECRET_ACCESS_KEY: minio.secretAccessKey,
      HOSTPLANE_SITES_DOMAIN: 'localhost',
      HOSTPLANE_TRUST_PROXY: 'loopback',
      HOSTPLANE_SQLITE_SHARD_NAME: name,
      // The load sends several small uploads to one site at once: the default upload byte budget
      // admits them, so every answer that is not a success is the outage's.
    });
    for (const name of ['replica-a', 'replica-b']) replicas.push(await newInstance(env(name)));
    // One base URL for both, so the site's origin is the same whichever replica answers.
    for (const r of replicas) {
      r.env.HOSTPLANE_BASE_URL = `http://localhost:${replicas[0]!.port}`;
      r.env.HOSTPLANE_SQLITE_SHARD_URL = `http://127.0.0.1:${r.port}`;
    }
    for (const name of ['replica-c', 'replica-d']) {
      const instance = await newInstance(env(name));
      instance.env.HOSTPLANE_BASE_URL = replicas[0]!.env.HOSTPLANE_BASE_URL;
      instance.env.HOSTPLANE_SQLITE_SHARD_URL = `http://127.0.0.1:${instance.port}`;
      extra.push(instance);
    }
    await Promise.all(replicas.map((r) => startServe(r)));

    const created = await cli(replicas[0]!, [
      'admin',
      'create-site',
      '--slug',
      'outage',
      '--email',
      'outage@example.com',
      '--plan',
      'business',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    origin = `http://outage.localhost:${replicas[0]!.port}`;
    const form = await request(
      0,
      '/api/v1/forms',
      { 'x-api-key': apiKey },
      {
        name: 'Load',
        fields: [
          { name: 'name', label: 'Name', type: 'text', required: true },
          { name: 'email', label: 'Email', type: 'email', required: true },
          { name: 'message', label: 'Message', type: 'textarea' },
        ],
      },
    );
    expect(form.status, JSON.stringify(form.body)).toBe(201);
    formUuid = (form.body.form as { uuid: string }).uuid;
    const install = await request(
      0,
      '/api/v1/sqlite/auth/install',
      { 'x-api-key': apiKey },
      { path: 'data/load.sqlite', name: 'load', requireUserAuth: false },
    );
    expect(install.status, JSON.stringify(install.body)).toBe(200);
    token = install.body.token as string;
    const table = await request(
      0,
      '/api/v1/sqlite/exec',
      { 'x-sqlite-token': token, origin },
      { sql: 'CREATE TABLE load (id INTEGER PRIMARY KEY, v TEXT NOT NULL)' },
    );
    expect(table.status, JSON.stringify(table.body)).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(
      [...replicas, ...extra].map(async ({ server }) => {
        if (!server) return;
        server.kill('SIGKILL');
        await exited(server);
      }),
    );
    await Promise.all([postgres?.stop(), minio?.stop()]);
    await Promise.all(
      [...replicas, ...extra].map(({ dataDir }) => rm(dataDir, { recursive: true, force: true })),
    );
  });

  it('two replicas racing to create a fresh bucket both start', () => {
    alive();
    expect(replicas.map((r) => r.serverLog.join(''))).not.toContainEqual(
      expect.stringContaining('already own'),
    );
  });

  it('PostgreSQL stopped (fast, then immediate) under load: 503 with Retry-After, no exit, writes resume', async () => {
    for (const mode of ['fast', 'immediate'] as const) {
      const before = await load(recovered(20_000).then(() => undefined));
      expect(before.length).toBeGreaterThan(0);
      let halted: () => void = () => undefined;
      const outage = new Promise<void>((resolve) => (halted = resolve));
      const during = load(outage);
      await postgres.halt(mode);
      // Unready on both (a readiness change, not an exit), then some more load against it.
      await eventually('both replicas unready', async () => {
        const states = await Promise.all(replicas.map(ready));
        return states.every((s) => s === 503);
      });
      const seen = seq;
      await eventually('load during the outage', () => seq > seen + 30);
      halted();
      const outcomes = await during;
      alive();
      expectOnlyOutage503s(outcomes, ['upload', 'submit']);
      await postgres.resume();
      const started = Date.now();
      await recovered(20_000);
      expect(Date.now() - started).toBeLessThan(20_000);
      await eventually('both replicas ready', async () =>
        (await Promise.all(replicas.map(ready))).every((s) => s === 200),
      );
      alive();
    }
  });

  it('MinIO killed under load: uploads 503 with Retry-After, then succeed once it is back', async () => {
    let stop: () => void = () => undefined;
    const outage = new Promise<void>((resolve) => (stop = resolve));
    const during = load(outage);
    await minio.kill();
    const seen = seq;
    await eventually('load during the outage', () => seq > seen + 30);
    // Back, while the load goes on: the first answers after a restart ("Server not initialized").
    await minio.restart();
    const seenAfter = seq;
    await eventually('load after the restart', () => seq > seenAfter + 15);
    stop();
    const outcomes = await during;
    alive();
    expectOnlyOutage503s(outcomes, ['upload']);
    await recovered(20_000);
    alive();
  });

  it('lost no acknowledged write', async () => {
    expect(acked.upload.length).toBeGreaterThan(10);
    for (const value of acked.upload) {
      const res = await request(0, `/api/v1/files/get?path=${encodeURIComponent(`load/${value}.txt`)}`, {
        'x-api-key': apiKey,
      });
      expect(res.status, `${value}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.content).toBe(value);
    }
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ v: string }>(
        "SELECT data->>'message' AS v FROM form_submissions",
      );
      const stored = new Set(rows.map((r) => r.v));
      expect(acked.submit.filter((v) => !stored.has(v))).toEqual([]);
    } finally {
      await client.end();
    }
    const rows = await request(
      0,
      '/api/v1/sqlite/query',
      { 'x-sqlite-token': token, origin },
      { sql: 'SELECT v FROM load' },
    );
    expect(rows.status).toBe(200);
    const inserted = new Set((rows.body.rows as Array<{ v: string }>).map((r) => r.v));
    expect(acked.sqlite.filter((v) => !inserted.has(v))).toEqual([]);
  });

  it('a replica started while PostgreSQL is down waits, unready, and becomes ready when it is back', async () => {
    await postgres.halt('immediate');
    const instance = extra[0]!;
    const starting = startServe(instance);
    starting.catch(() => undefined);
    await eventually('alive and unready while the database is away', async () => {
      const health = await rawRequest(instance.port, '/healthz', {}).catch(() => undefined);
      return health?.status === 200 && (await ready(instance)) === 503;
    });
    await eventually('a log line per attempt, with its delay', () =>
      /cannot reach the database; not ready, trying again in \d+ ms[\s\S]*trying again in \d+ ms/.test(
        instance.serverLog.join(''),
      ),
    );
    expect(instance.server?.exitCode).toBeNull();
    await postgres.resume();
    await starting;
    expect(await ready(instance)).toBe(200);
    alive();
  }, 60_000);

  it('a replica started while MinIO is down waits, unready, and becomes ready when it is back', async () => {
    await minio.kill();
    const instance = extra[1]!;
    const starting = startServe(instance);
    starting.catch(() => undefined);
    await eventually('alive, unready, and saying why', async () => {
      const health = await rawRequest(instance.port, '/healthz', {}).catch(() => undefined);
      return (
        health?.status === 200 &&
        (await ready(instance)) === 503 &&
        instance.serverLog.join('').includes('cannot reach the blob store; not ready, trying again in')
      );
    });
    await minio.restart();
    await starting;
    expect(await ready(instance)).toBe(200);
  }, 60_000);
});
