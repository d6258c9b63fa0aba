import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../support/hostplane.js';
import {
  execIn,
  hardenBundle,
  hostplaneArchive,
  imageRecipe,
  litestreamArchive,
  litestreamBinDir,
  litestreamValues,
  removeContainer,
  requireRuncAndImage,
  runContainer,
  runLitestreamInit,
  unpackBundle,
  type Container,
  type RuntimeProcess,
} from '../support/oci.js';
import { freePort, waitUntilReady } from '../support/procs.js';

// The images deploy/image/build.sh makes (`make image-oci`), run with runc the way the chart runs
// them (UID 10001, read-only root filesystem, no capabilities, /tmp an emptyDir): the Litestream
// image's init-container copy, then `hostplane serve` on embedded defaults answering through the
// API with the native SQLite build and argon2 loaded, and the copied Litestream runnable in it.

const recipe = imageRecipe;
const binDir = litestreamBinDir;

describe('the Hostplane and Litestream images under runc, as the chart runs them', () => {
  let dir = '';
  let imageProcess: RuntimeProcess;
  let container: Container | undefined;
  let port = 0;
  const suffix = `${process.pid}-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    await requireRuncAndImage(hostplaneArchive);
    await requireRuncAndImage(litestreamArchive);
    dir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-image-'));

    const litestreamBin = await runLitestreamInit(litestreamArchive, dir);

    const bundle = await unpackBundle(hostplaneArchive, path.join(dir, 'hostplane'));
    port = await freePort();
    imageProcess = await hardenBundle(bundle, {
      env: {
        HOST: '127.0.0.1',
        PORT: String(port),
        HOSTPLANE_METRICS_PORT: '0',
        HOSTPLANE_BASE_URL: `http://localhost:${port}`,
      },
      binds: [[litestreamBin, binDir, true]],
    });
    container = runContainer(bundle, `hp-image-${suffix}`);
    const running = container;
    await waitUntilReady(
      'hostplane serve in the image',
      running.child,
      running.output,
      async () => (await rawRequest(port, '/readyz', {})).status === 200,
      60_000,
    );
  }, 180_000);

  afterAll(async () => {
    if (container) await removeContainer(container);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const api = (
    pathAndQuery: string,
    init: { method?: string; headers?: Record<string, string>; json?: unknown },
  ) =>
    rawRequest(port, pathAndQuery, {
      method: init.method ?? 'POST',
      headers: { host: `localhost:${port}`, 'content-type': 'application/json', ...init.headers },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });

  it("runs the recipe's process: UID 10001, /app, the Dockerfile's entrypoint and environment", async () => {
    expect(imageProcess.user).toEqual({ uid: recipe.user.uid, gid: recipe.user.gid });
    expect(imageProcess.cwd).toBe(recipe.workdir);
    expect(imageProcess.args).toEqual([...recipe.entrypoint, ...recipe.cmd]);
    for (const [k, v] of Object.entries(recipe.env)) expect(imageProcess.env).toContain(`${k}=${v}`);
    const id = await execIn(container!.id, ['id', '-u']);
    expect(id.stdout.trim()).toBe(String(recipe.user.uid));
    const node = await execIn(container!.id, ['node', '--version']);
    expect(node.stdout.trim()).toMatch(/^v24\./);
    // The chart's preStop hook runs `sleep`.
    expect((await execIn(container!.id, ['sleep', '0'])).code).toBe(0);
  });

  it('writes only to /tmp: the root filesystem is read-only', async () => {
    const app = await execIn(container!.id, ['touch', '/app/probe']);
    expect(app.code).not.toBe(0);
    expect(app.stderr).toMatch(/Read-only file system/);
    expect((await execIn(container!.id, ['touch', '/tmp/probe'])).code).toBe(0);
  });

  it('finds the native SQLite build from the code, whatever the working directory (a pod may set workingDir)', async () => {
    const config = path.posix.join(recipe.workdir, 'dist/src/config/index.js');
    const found = await execIn(
      container!.id,
      [
        'node',
        '-e',
        `import(${JSON.stringify(config)}).then((m) => console.log(m.locateNativeParts().binding))`,
      ],
      { cwd: '/' },
    );
    expect(found.code, found.stderr).toBe(0);
    expect(found.stdout.trim()).toBe(path.posix.join(recipe.workdir, 'native/build/better_sqlite3.node'));
  });

  let apiKey = '';
  it('creates a site with the admin CLI inside the container and serves a page uploaded through the API', async () => {
    const created = await execIn(container!.id, [
      ...recipe.entrypoint,
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
    expect(created.code, created.stderr).toBe(0);
    apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey;
    const up = await api('/api/v1/files/upload', {
      headers: { 'x-api-key': apiKey },
      json: { path: 'index.html', content: '<h1>from the image</h1>' },
    });
    expect(up.status).toBe(200);
    const page = await rawRequest(port, '/', { headers: { host: `demo.localhost:${port}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('<h1>from the image</h1>');
  });

  it('creates and writes a SQLite database (the native build) and registers a user (argon2)', async () => {
    const installed = await api('/api/v1/sqlite/auth/install', {
      headers: { 'x-api-key': apiKey },
      json: { path: 'data/app.sqlite', name: 'app', requireUserAuth: false },
    });
    expect(installed.status).toBe(200);
    const token = ((await installed.json()) as { token: string }).token;
    const scoped = { 'x-sqlite-token': token, origin: `http://demo.localhost:${port}` };
    for (const sql of ['CREATE TABLE notes (body TEXT)', "INSERT INTO notes VALUES ('kept')"]) {
      const res = await api('/api/v1/sqlite/exec', { headers: scoped, json: { sql } });
      expect(res.status, await res.clone().text()).toBe(200);
    }
    const query = await api('/api/v1/sqlite/query', {
      headers: scoped,
      json: { sql: 'SELECT body FROM notes' },
    });
    expect(await query.json()).toMatchObject({ success: true, rows: [{ body: 'kept' }], rowCount: 1 });
    const registered = await api('/api/v1/sqlite/auth/register', {
      headers: { ...scoped, 'x-api-key': apiKey },
      json: { email: 'user@example.com', password: 'correct horse battery' },
    });
    expect(registered.status).toBe(201);
  });

  it('runs the Litestream binary the init container copied, with the CA bundle beside it', async () => {
    const version = await execIn(container!.id, [
      `${binDir}/${path.basename(litestreamValues.binaryPath)}`,
      'version',
    ]);
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe(`v${litestreamValues.image.tag}`);
    const ca = await execIn(container!.id, [
      'test',
      '-s',
      `${binDir}/${path.basename(litestreamValues.caBundlePath)}`,
    ]);
    expect(ca.code).toBe(0);
  });
});
