import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { rawRequest } from '../support/hostplane.js';
import { createDatabase } from '../support/postgres.js';

// The admin CLI is a contract other tools rely on: these tests run the built binary as a user
// would, against a running `hostplane serve`.
const exec = promisify(execFile);
const bin = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

interface Instance {
  env: NodeJS.ProcessEnv;
  port: number;
  dataDir: string;
  server?: ChildProcess;
  serverLog: string[];
}

async function newInstance(extraEnv: NodeJS.ProcessEnv = {}): Promise<Instance> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-cli-'));
  const port = await freePort();
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    HOSTPLANE_DATA_DIR: dataDir,
    HOSTPLANE_BASE_URL: `http://localhost:${port}`,
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  return { env, port, dataDir, serverLog: [] };
}

async function startServe(instance: Instance): Promise<void> {
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: instance.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c: Buffer) => instance.serverLog.push(c.toString()));
  child.stderr?.on('data', (c: Buffer) => instance.serverLog.push(c.toString()));
  instance.server = child;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`serve exited early:\n${instance.serverLog.join('')}`);
    const ready = await rawRequest(instance.port, '/readyz', {}).catch(() => undefined);
    if (ready?.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`serve did not become ready:\n${instance.serverLog.join('')}`);
}

async function stopServe(instance: Instance): Promise<number | null> {
  const child = instance.server;
  if (!child || child.exitCode !== null) return child?.exitCode ?? null;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

async function cli(
  instance: Instance,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [bin, ...args], { env: instance.env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function siteRequest(instance: Instance, slug: string, pathAndQuery = '/') {
  return rawRequest(instance.port, pathAndQuery, { headers: { host: `${slug}.localhost:${instance.port}` } });
}

function apiRequest(
  instance: Instance,
  pathAndQuery: string,
  init: { method?: string; headers?: Record<string, string>; json?: unknown } = {},
) {
  return rawRequest(instance.port, pathAndQuery, {
    method: init.method,
    headers: { host: `localhost:${instance.port}`, 'content-type': 'application/json', ...init.headers },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
}

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` (make test does) first`);
});

describe('hostplane serve + admin CLI on embedded defaults (PGlite)', () => {
  let instance: Instance;
  beforeAll(async () => {
    instance = await newInstance();
    await startServe(instance);
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
  });

  let apiKey = '';
  let accountId = 0;

  it('admin create-site --json prints one object with the contract keys, while the server runs', async () => {
    const out = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'demo',
      '--email',
      'owner@example.com',
      '--plan',
      'free',
      '--json',
    ]);
    expect(out.code).toBe(0);
    const created = JSON.parse(out.stdout);
    expect(Object.keys(created).sort()).toEqual(['accountId', 'apiKey', 'plan', 'siteId', 'siteUrl', 'slug']);
    expect(created).toMatchObject({
      slug: 'demo',
      plan: 'free',
      siteUrl: `http://demo.localhost:${instance.port}`,
    });
    expect(typeof created.accountId).toBe('number');
    expect(typeof created.siteId).toBe('number');
    apiKey = created.apiKey;
    accountId = created.accountId;
  });

  it('the key publishes a page that the site host serves', async () => {
    const up = await apiRequest(instance, '/api/v1/files/upload', {
      method: 'POST',
      headers: { 'x-api-key': apiKey },
      json: { path: 'index.html', content: '<h1>hi</h1>' },
    });
    expect(up.status).toBe(200);
    const page = await siteRequest(instance, 'demo');
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('<h1>hi</h1>');
  });

  it('admin session mints a bearer token that POST /api/keys/generate-temp accepts', async () => {
    const out = await cli(instance, ['admin', 'session', '--email', 'owner@example.com', '--json']);
    expect(out.code).toBe(0);
    const session = JSON.parse(out.stdout);
    expect(Object.keys(session).sort()).toEqual(['expiresAt', 'token']);
    expect(new Date(session.expiresAt).getTime()).toBeGreaterThan(Date.now());
    const res = await apiRequest(instance, '/api/keys/generate-temp', {
      method: 'POST',
      headers: { authorization: `Bearer ${session.token}` },
      json: {},
    });
    expect(res.status).toBe(200);
    const temp = await res.json();
    const list = await apiRequest(instance, '/api/v1/files/list', {
      headers: { 'x-api-key': temp.temp_api_key },
    });
    expect(list.status).toBe(200);
  });

  it('a second site of the same email joins the existing account', async () => {
    const out = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'second',
      '--email',
      'OWNER@example.com',
      '--json',
    ]);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout).accountId).toBe(accountId);
    const other = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'third',
      '--email',
      'other@example.com',
      '--json',
    ]);
    expect(JSON.parse(other.stdout).accountId).not.toBe(accountId);
  });

  it('a taken slug or a bad flag fails with a non-zero exit and changes nothing', async () => {
    const taken = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'demo',
      '--email',
      'x@example.com',
      '--json',
    ]);
    expect(taken.code).toBe(1);
    expect(JSON.parse(taken.stdout).message).toMatch(/already taken/);
    const badSlug = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'Not_A_Slug',
      '--email',
      'x@example.com',
      '--json',
    ]);
    expect(badSlug.code).not.toBe(0);
    const badPlan = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'okslug',
      '--email',
      'x@example.com',
      '--plan',
      'gold',
    ]);
    expect(badPlan.code).toBe(2);
    const unknown = await cli(instance, ['admin', 'session', '--email', 'nobody@example.com', '--json']);
    expect(unknown.code).toBe(1);
    expect((await siteRequest(instance, 'okslug')).status).toBe(404);
  });

  it('keeps the admin secret and socket owner-only, and refuses a wrong secret', async () => {
    const secretFile = path.join(instance.dataDir, 'admin.secret');
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(instance.dataDir, 'admin.sock'))).mode & 0o777).toBe(0o600);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          socketPath: path.join(instance.dataDir, 'admin.sock'),
          path: '/session',
          method: 'POST',
          headers: { 'x-admin-secret': 'f'.repeat(64) },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ email: 'owner@example.com' }));
    });
    expect(status).toBe(401);
  });

  it('never writes a key or token into the server log', async () => {
    const log = instance.serverLog.join('');
    expect(log).toContain('request completed');
    expect(log).not.toContain(apiKey);
  });

  it('refuses a second server on the same data dir while the first runs', async () => {
    const second = { ...instance, port: await freePort(), serverLog: [] as string[] };
    second.env = { ...instance.env, PORT: String(second.port) };
    await expect(startServe(second)).rejects.toThrow(/in use by process/);
  });

  it('keeps sites, keys and files across a restart', async () => {
    expect(await stopServe(instance)).toBe(0);
    await startServe(instance);
    const page = await siteRequest(instance, 'demo');
    expect(await page.text()).toBe('<h1>hi</h1>');
    const list = await apiRequest(instance, '/api/v1/files/list', { headers: { 'x-api-key': apiKey } });
    expect(list.status).toBe(200);
  });

  it('works without a running server too, and the server then sees the site', async () => {
    await stopServe(instance);
    const out = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'offline',
      '--email',
      'off@example.com',
      '--json',
    ]);
    expect(out.code).toBe(0);
    await startServe(instance);
    const { apiKey: offlineKey } = JSON.parse(out.stdout);
    const list = await apiRequest(instance, '/api/v1/files/list', { headers: { 'x-api-key': offlineKey } });
    expect(list.status).toBe(200);
    expect((await list.json()).storage_folder.slug).toBe('offline');
  });

  it('reads the admin secret only from the data dir', async () => {
    const secret = await readFile(path.join(instance.dataDir, 'admin.secret'), 'utf8');
    expect(secret.trim()).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('admin CLI against PostgreSQL while the server runs', () => {
  let instance: Instance;
  beforeAll(async () => {
    instance = await newInstance({ DATABASE_URL: await createDatabase(inject('postgresUrl')) });
    await startServe(instance);
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
  });

  it('creates a site the running server serves', async () => {
    const out = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'pgsite',
      '--email',
      'pg@example.com',
      '--plan',
      'standard',
      '--json',
    ]);
    expect(out.code).toBe(0);
    const { apiKey, plan } = JSON.parse(out.stdout);
    expect(plan).toBe('standard');
    const up = await apiRequest(instance, '/api/v1/files/upload', {
      method: 'POST',
      headers: { 'x-api-key': apiKey },
      json: { path: 'index.html', content: 'on postgres' },
    });
    expect(up.status).toBe(200);
    expect(await (await siteRequest(instance, 'pgsite')).text()).toBe('on postgres');
  });
});
