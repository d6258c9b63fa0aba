import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { jsonRequest, metricValue, rawRequest } from '../support/hostplane.js';
import { createBucket } from '../support/minio.js';
import { createDatabase } from '../support/postgres.js';
import { exited, freePort } from '../support/procs.js';
import { bin, cli, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';

// The cluster shape, as the chart runs it, through the built binary: one `serve --role api` (not a
// shard: it forwards every call that needs a file) and two `serve --role sqlite` shards, one
// PostgreSQL and one S3 bucket. Every SQLite call goes to the api only.

describe('the cluster shape: one api and two sqlite shards', () => {
  let api: Instance;
  const shards: Instance[] = [];
  const metricsPorts: number[] = [];
  let apiKey = '';
  let origin = '';
  let installs = 0;
  let common: NodeJS.ProcessEnv = {};

  const call = async (
    port: number,
    method: string,
    route: string,
    headers: Record<string, string>,
    json?: unknown,
  ) => {
    const { res, body } = await jsonRequest(port, `/api/v1/sqlite/${route}`, {
      method,
      host: `localhost:${api.port}`,
      headers,
      json,
    });
    return { status: res.status, headers: res.headers, body };
  };
  const scoped = (token: string, method: string, route: string, json?: unknown, extra = {}) =>
    call(api.port, method, route, { 'x-sqlite-token': token, origin, ...extra }, json);
  const install = async (dbPath: string, requireUserAuth = false) => {
    const res = await call(
      api.port,
      'POST',
      'auth/install',
      { 'x-api-key': apiKey },
      {
        path: dbPath,
        name: `token-${++installs}`,
        requireUserAuth,
      },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.token as string;
  };
  /** The database files in an instance's data dir (named by database id). */
  const sqliteFiles = async (instance: Instance): Promise<string[]> =>
    (await readdir(path.join(instance.dataDir, 'sqlite')).catch(() => [])).filter((name) =>
      /^\d+\.sqlite$/.test(name),
    );

  beforeAll(async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    const s3 = inject('s3');
    const [databaseUrl, bucket] = await Promise.all([
      createDatabase(inject('postgresUrl')),
      createBucket(s3),
    ]);
    common = {
      DATABASE_URL: databaseUrl,
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: bucket,
      S3_REGION: s3.region,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      HOSTPLANE_SITES_DOMAIN: 'localhost',
    };
    api = await newInstance(common);
    // As the chart's pre-install hook does: neither api nor sqlite migrates.
    const migrated = await cli(api, ['migrate']);
    expect(migrated.code, migrated.stderr).toBe(0);
    for (const name of ['shard-0', 'shard-1']) {
      const metricsPort = await freePort();
      const shard = await newInstance({
        ...common,
        // Every role derives a site's origins from the one public base URL.
        HOSTPLANE_BASE_URL: api.env.HOSTPLANE_BASE_URL,
        HOSTPLANE_METRICS_PORT: String(metricsPort),
        HOSTPLANE_SQLITE_SHARD_NAME: name,
      });
      shard.env.HOSTPLANE_SQLITE_SHARD_URL = `http://127.0.0.1:${shard.port}`;
      shards.push(shard);
      metricsPorts.push(metricsPort);
    }
    await Promise.all([
      startServe(api, ['--role', 'api']),
      ...shards.map((shard) => startServe(shard, ['--role', 'sqlite'])),
    ]);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(
      [api, ...shards].map(async (instance) => {
        if (!instance?.server || instance.server.exitCode !== null) return;
        instance.server.kill('SIGKILL');
        await exited(instance.server);
      }),
    );
    await Promise.all([api, ...shards].map((i) => i && rm(i.dataDir, { recursive: true, force: true })));
  });

  it('a sqlite process is ready (PostgreSQL reachable, registered) and serves no other role', async () => {
    const shard = shards[0]!;
    const ready = await rawRequest(shard.port, '/readyz', {});
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok' });
    // No files API, no API documents, no sites: only the SQLite routes and the probes.
    const host = { host: `localhost:${api.port}` };
    expect((await rawRequest(shard.port, '/api/v1/files', { headers: host })).status).toBe(404);
    expect((await rawRequest(shard.port, '/api/v1/openapi.json', { headers: host })).status).toBe(404);
    const site = await rawRequest(shard.port, '/', { headers: { host: `anything.localhost:${api.port}` } });
    expect(site.status).toBe(404);
    const metrics = await fetch(`http://127.0.0.1:${metricsPorts[0]}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('hostplane_sqlite_leases_held');
  });

  it('places databases installed through the api on both shards, and serves every call through the api', async () => {
    const args = ['--slug', 'cluster', '--email', 'c@example.com', '--plan', 'business', '--json'];
    const created = await cli(api, ['admin', 'create-site', ...args]);
    expect(created.code, created.stderr).toBe(0);
    const site = JSON.parse(created.stdout) as { apiKey: string; siteUrl: string };
    apiKey = site.apiKey;
    origin = site.siteUrl;

    const tokens: string[] = [];
    for (let i = 0; i < 4; i++) {
      const token = await install(`data/db${i}.sqlite`);
      tokens.push(token);
      const created = await scoped(token, 'POST', 'exec', { sql: 'CREATE TABLE notes (body TEXT)' });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      expect(created.headers.get('access-control-allow-origin')).toBe(origin);
    }
    // Least count first: two on each shard, none on the api (it is not a shard).
    const files = await Promise.all([api, ...shards].map((instance) => sqliteFiles(instance)));
    expect(files.map((names) => names.length)).toEqual([0, 2, 2]);
    const leases = await Promise.all(
      metricsPorts.map(async (port) =>
        metricValue(
          await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
          'hostplane_sqlite_leases_held',
        ),
      ),
    );
    expect(leases).toEqual([2, 2]);

    const token = tokens[1]!;
    const exec = await scoped(token, 'POST', 'exec', { sql: 'INSERT INTO notes VALUES (?)', params: ['a'] });
    expect(exec.status).toBe(200);
    const batch = await scoped(token, 'POST', 'batch', {
      statements: [
        { sql: 'INSERT INTO notes VALUES (?)', params: ['b'] },
        { sql: 'INSERT INTO notes VALUES (?)', params: ['c'] },
      ],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    const query = await scoped(token, 'POST', 'query', { sql: 'SELECT body FROM notes ORDER BY body' });
    expect(query.status).toBe(200);
    expect(query.body.rows).toEqual([{ body: 'a' }, { body: 'b' }, { body: 'c' }]);
    const version = await scoped(token, 'GET', 'version');
    expect(version.status).toBe(200);
    expect(version.body.version).toBe(query.body.version);
    const schema = await scoped(token, 'GET', 'schema');
    expect(schema.status).toBe(200);

    // A call straight to a shard (no shard credential) is served like the api serves it: admitted,
    // then served by the owner or forwarded to it.
    for (const shard of shards) {
      const direct = await call(
        shard.port,
        'POST',
        'query',
        { 'x-sqlite-token': token, origin },
        {
          sql: 'SELECT count(*) AS n FROM notes',
        },
      );
      expect(direct.status).toBe(200);
      expect(direct.body.rows).toEqual([{ n: 3 }]);
    }
    const forged = await call(
      shards[0]!.port,
      'POST',
      'query',
      { 'x-sqlite-token': token, origin, 'x-hostplane-shard-secret': 'AAAA' },
      { sql: 'SELECT 1' },
    );
    expect(forged.status).toBe(403);
  });

  it('registers, logs in and serves a user-auth database through the api', async () => {
    const token = await install('data/users.sqlite', true);
    const master = { 'x-api-key': apiKey };
    const registered = await scoped(
      token,
      'POST',
      'auth/register',
      { email: 'ann@example.com', password: 'correct horse battery' },
      master,
    );
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const login = await scoped(token, 'POST', 'auth/login', {
      email: 'ann@example.com',
      password: 'correct horse battery',
    });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    const user = { 'x-sqlite-user-token': login.body.userToken as string };
    expect((await scoped(token, 'POST', 'exec', { sql: 'CREATE TABLE t (x)' }, user)).status).toBe(200);
    const me = await scoped(token, 'GET', 'auth/me', undefined, user);
    expect(me.status, JSON.stringify(me.body)).toBe(200);
    const read = await scoped(token, 'POST', 'query', { sql: 'SELECT count(*) AS n FROM t' }, user);
    expect(read.status).toBe(200);
    const anonymous = await scoped(token, 'POST', 'query', { sql: 'SELECT 1' });
    expect(anonymous.status).toBe(401);
  });

  it('a sqlite process is unready until its start-up is done (here: held at registering)', async () => {
    const late = await newInstance({ ...common, HOSTPLANE_SQLITE_SHARD_NAME: 'shard-late' });
    shards.push(late);
    // Registering (the shard's first heartbeat) waits behind a lock the test holds on the table.
    const holder = new pg.Client({ connectionString: common.DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table sqlite_shards in share mode');
      const started = startServe(late, ['--role', 'sqlite']);
      started.catch(() => undefined);
      const starting = await eventually('the late shard answering its probes', async () => {
        const res = await rawRequest(late.port, '/readyz', {}).catch(() => undefined);
        const body = res && ((await res.json()) as { message?: string });
        return body?.message === 'SQLite shard still starting' && { status: res!.status, body };
      });
      expect(starting).toEqual({
        status: 503,
        body: { status: 'unavailable', message: 'SQLite shard still starting' },
      });
      expect((await rawRequest(late.port, '/healthz', {})).status).toBe(200);
      await holder.query('rollback');
      await started; // /readyz 200
    } finally {
      await holder.end();
    }
  }, 40_000);

  it('answers 503 CAPACITY with Retry-After once every shard is stopped', async () => {
    const placed = await install('data/db0.sqlite');
    const fresh = await install('data/late.sqlite');
    expect(await Promise.all(shards.map((shard) => stopServe(shard)))).toEqual(shards.map(() => 0));

    const away = await scoped(placed, 'POST', 'query', { sql: 'SELECT 1' });
    expect(away.status).toBe(503);
    expect(away.body).toMatchObject({ error: 'Service Unavailable', retry_after: 5 });
    expect(away.body.message).toBe(
      'The shard that holds this database is not reachable right now; try again shortly.',
    );
    expect(away.headers.get('retry-after')).toBe('5');
    // Not placed yet, and no live shard to place it on (the api never takes it itself).
    const unplaced = await scoped(fresh, 'POST', 'exec', { sql: 'CREATE TABLE t (x)' });
    expect(unplaced.status).toBe(503);
    expect(unplaced.body).toEqual({
      error: 'Service Unavailable',
      message: 'No SQLite shard is running right now; try again shortly.',
      retry_after: 5,
    });
    expect(unplaced.headers.get('retry-after')).toBe('5');
    expect(await sqliteFiles(api)).toEqual([]);
  }, 30_000);
});
