import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { jsonRequest } from '../support/hostplane.js';
import { createBucket } from '../support/minio.js';
import { createDatabase } from '../support/postgres.js';
import { exited } from '../support/procs.js';
import { bin, cli, newInstance, startServe, type Instance } from '../support/cli.js';

// The contract, run as an outside checker runs it: two `hostplane serve` processes (the
// built binary) with their own data dirs, one PostgreSQL and one S3 bucket, distinct shard names
// and URLs, behind a round-robin proxy. Every check goes through the proxy only.

/** Which backend answered, set by the proxy on every answer (test-only). */
const BACKEND_HEADER = 'x-test-backend';

/**
 * A round-robin HTTP proxy: each new request goes to the next backend (a fresh connection each
 * time, so no pooled socket can die between calls). Method, path, headers (Host included) and
 * body are forwarded; the answer is streamed back. An unreachable backend answers 502.
 */
function startProxy(ports: number[]): Promise<{ server: http.Server; port: number; next: () => number }> {
  let count = 0;
  const server = http.createServer((req, res) => {
    const index = count++ % ports.length;
    // HOSTPLANE_TRUST_PROXY=loopback: the backends take the client address from here.
    const xff = [req.headers['x-forwarded-for'], req.socket.remoteAddress].filter(Boolean).join(', ');
    const upstream = http.request(
      {
        host: '127.0.0.1',
        port: ports[index],
        method: req.method,
        path: req.url,
        headers: { ...req.headers, 'x-forwarded-for': xff },
        agent: false,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, { ...answer.headers, [BACKEND_HEADER]: String(index) });
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(502, { [BACKEND_HEADER]: String(index) }).end();
    });
    req.pipe(upstream);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as AddressInfo).port, next: () => count % ports.length }),
    ),
  );
}

describe('two SQLite shard processes behind one round-robin proxy', () => {
  const instances: Instance[] = [];
  const ports: number[] = [];
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let origin = '';
  let apiKey = '';
  let token = '';
  let tokenId = 0;
  let owner = -1; // index of the process whose data dir holds the file

  /** A call through the proxy: which backend answered, the status, headers and JSON body. */
  async function call(method: string, pathAndQuery: string, headers: Record<string, string>, json?: unknown) {
    const { res, body } = await jsonRequest(proxy.port, pathAndQuery, {
      method,
      host: `localhost:${proxy.port}`,
      headers,
      json,
    });
    return {
      backend: Number(res.headers.get(BACKEND_HEADER)),
      status: res.status,
      headers: res.headers,
      body,
    };
  }
  const scoped = (method: string, route: string, json?: unknown, withToken = token) =>
    call(method, `/api/v1/sqlite/${route}`, { 'x-sqlite-token': withToken, origin }, json);
  const master = (method: string, route: string, json?: unknown) =>
    call(method, `/api/v1/sqlite/${route}`, { 'x-api-key': apiKey }, json);
  /** Sends harmless calls until the proxy's next request goes to backend `index`. */
  async function aimAt(index: number): Promise<void> {
    for (let i = 0; i < ports.length && proxy.next() !== index; i++) await call('GET', '/readyz', {});
    expect(proxy.next()).toBe(index);
  }
  /** The database files in an instance's data dir. */
  const sqliteFiles = async (instance: Instance): Promise<string[]> =>
    (await readdir(path.join(instance.dataDir, 'sqlite')).catch(() => [])).filter((name) =>
      /^\d+\.sqlite$/.test(name),
    );

  beforeAll(async () => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
    proxy = await startProxy(ports);
    const s3 = inject('s3');
    const [databaseUrl, bucket] = await Promise.all([
      createDatabase(inject('postgresUrl')),
      createBucket(s3),
    ]);
    for (const name of ['replica-a', 'replica-b']) {
      const instance = await newInstance({
        DATABASE_URL: databaseUrl,
        S3_ENDPOINT: s3.endpoint,
        S3_BUCKET: bucket,
        S3_REGION: s3.region,
        S3_FORCE_PATH_STYLE: 'true',
        AWS_ACCESS_KEY_ID: s3.accessKeyId,
        AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
        HOSTPLANE_BASE_URL: `http://localhost:${proxy.port}`,
        HOSTPLANE_SITES_DOMAIN: 'localhost',
        HOSTPLANE_TRUST_PROXY: 'loopback',
        HOSTPLANE_SQLITE_SHARD_NAME: name,
      });
      instance.env.HOSTPLANE_SQLITE_SHARD_URL = `http://127.0.0.1:${instance.port}`;
      instances.push(instance);
      ports.push(instance.port);
    }
    // Both migrate the fresh database at once (under PostgreSQL's advisory lock).
    await Promise.all(instances.map((instance) => startServe(instance)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(
      instances.map(async ({ server }) => {
        if (!server) return;
        server.kill('SIGKILL');
        await exited(server);
      }),
    );
    await new Promise((resolve) => proxy?.server.close(resolve));
    await Promise.all(instances.map(({ dataDir }) => rm(dataDir, { recursive: true, force: true })));
  });

  it('installs a database and runs CRUD through both backends; its file lives on exactly one', async () => {
    const created = await cli(instances[1]!, [
      'admin',
      'create-site',
      '--slug',
      'replicas',
      '--email',
      'replicas@example.com',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const site = JSON.parse(created.stdout) as { apiKey: string; siteUrl: string };
    apiKey = site.apiKey;
    origin = `http://replicas.localhost:${proxy.port}`;
    expect(site.siteUrl).toBe(origin);

    const install = await master('POST', 'auth/install', {
      path: 'data/app.sqlite',
      name: 'app',
      requireUserAuth: false,
    });
    expect(install.status, JSON.stringify(install.body)).toBe(200);
    token = install.body.token as string;
    tokenId = install.body.tokenId as number;
    expect(install.body.allowedOrigins).toEqual([origin]);

    const versions: number[] = [];
    const backends = new Set<number>();
    const writes = [
      { sql: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)' },
      ...Array.from({ length: 20 }, (_, i) => ({
        sql: 'INSERT INTO notes (body) VALUES (?)',
        params: [`n${i}`],
      })),
    ];
    for (const write of writes) {
      const res = await scoped('POST', 'exec', write);
      expect(res.status, `${write.sql} via backend ${res.backend}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe(origin);
      versions.push(res.body.version as number);
      backends.add(res.backend);
    }
    expect(backends).toEqual(new Set([0, 1]));
    for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]!);
    for (let i = 0; i < 2; i++) {
      const count = await scoped('POST', 'query', { sql: 'SELECT count(*) AS n FROM notes' });
      expect(count.status).toBe(200);
      expect(count.body).toMatchObject({ rows: [{ n: 20 }], version: versions.at(-1) });
    }

    // The file is named by the database's id (<data dir>/sqlite/<id>.sqlite).
    const files = await Promise.all(instances.map((instance) => sqliteFiles(instance)));
    expect(files.flat()).toHaveLength(1);
    owner = files.findIndex((names) => names.length === 1);
  });

  it('refuses a revoked token on both backends: at once where revoked, on the other once NOTIFY lands', async () => {
    expect(owner).toBeGreaterThanOrEqual(0);
    // Revoke through the replica that does not own the file: the owner (which would refuse a
    // forwarded call on its own) then learns only through PostgreSQL NOTIFY.
    const revoker = 1 - owner;
    const other = 1 - revoker;
    await aimAt(revoker);
    const revoked = await master('DELETE', `auth/tokens/${tokenId}`);
    expect(revoked).toMatchObject({ backend: revoker, status: 200, body: { tokenId } });

    const query = { sql: 'SELECT count(*) AS n FROM notes' };
    // The revoker answers 401 from its first call; the other may serve a call or two from memory.
    const byRevoker: number[] = [];
    await eventually(
      'the other replica refusing the revoked token',
      async () => {
        const res = await scoped('POST', 'query', query);
        if (res.backend === revoker) byRevoker.push(res.status);
        return res.backend === other && res.status === 401;
      },
      5_000,
    );
    expect(byRevoker.every((status) => status === 401)).toBe(true);
    const after = await Promise.all(Array.from({ length: 6 }, () => scoped('POST', 'query', query)));
    expect(new Set(after.map((r) => r.backend))).toEqual(new Set([0, 1]));
    for (const res of after) {
      expect(res.status).toBe(401);
      expect(res.body.message).toBe('Invalid, expired, or revoked SQLite token.');
    }
  });

  it('answers 503 while the owner is killed, and serves the same data again once it is restarted', async () => {
    expect(owner).toBeGreaterThanOrEqual(0);
    const reinstall = await master('POST', 'auth/install', {
      path: 'data/app.sqlite',
      name: 'after-revoke',
      requireUserAuth: false,
    });
    expect(reinstall.status).toBe(200);
    token = reinstall.body.token as string;
    const count = { sql: 'SELECT count(*) AS n FROM notes' };
    for (let i = 0; i < 2; i++) expect((await scoped('POST', 'query', count)).body.rows).toEqual([{ n: 20 }]);

    const survivor = 1 - owner;
    const killed = instances[owner]!;
    killed.server!.kill('SIGKILL');
    await exited(killed.server!);
    // The survivor cannot reach the owner (its lease and heartbeat are still fresh, its file on
    // the dead one's disk): 503 with Retry-After. Calls landing on the dead backend get 502 from
    // the proxy and tell nothing about the product.
    const down = await eventually('an answer from the survivor', async () => {
      const res = await scoped('POST', 'query', count);
      return res.backend === survivor && res;
    });
    expect(down.status).toBe(503);
    expect(down.body.error).toBe('Service Unavailable');
    expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0);

    // Same data dir, shard name and port: the shard takes back its own lease and opens its file.
    await startServe(killed);
    // 40 s, above the lease TTL (30 s): a shard restarted under its own name takes its lease back
    // at once (about a second here), but should it have to wait for the dead process's lease to
    // expire (as for any other shard), that is still correct, and takes up to 30 s after the
    // last renewal (measured 29 s with the same-name takeover disabled).
    const served = new Map<number, unknown>();
    await eventually(
      'both backends serving the database again',
      async () => {
        const res = await scoped('POST', 'query', count);
        if (res.status === 200) served.set(res.backend, res.body.rows);
        return served.size === 2;
      },
      40_000,
    );
    expect([...served.values()]).toEqual([[{ n: 20 }], [{ n: 20 }]]);
    const write = await scoped('POST', 'exec', {
      sql: 'INSERT INTO notes (body) VALUES (?)',
      params: ['back'],
    });
    expect(write.status).toBe(200);
    const after = await Promise.all([0, 1].map(() => scoped('POST', 'query', count)));
    expect(after.map((r) => [r.status, r.body.rows])).toEqual([
      [200, [{ n: 21 }]],
      [200, [{ n: 21 }]],
    ]);
    // Served from the file it had: nothing was placed or copied on the survivor.
    const files = await Promise.all(instances.map((instance) => sqliteFiles(instance)));
    expect(files[survivor]).toEqual([]);
    expect(files[owner]).toHaveLength(1);
  }, 60_000);
});
