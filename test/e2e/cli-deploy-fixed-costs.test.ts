import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, realpathSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, cli, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';
import { siteFolder } from '../support/deploy-folder.js';

// The fixed costs of `hostplane deploy` (issue 29: a 300-file deploy, whole process, ten times
// faster than 300 single uploads; a one-file redeploy ≤ 0.5 s): what its process loads, and its
// round trips.
//
// `hostplane deploy` is a client: its process loads the command line, the error registry and the
// files domain's client face (limits, path rules, extensions), never the server's graph (database
// drivers, drizzle, the S3 SDK, express, argon2, metrics…), whose loading cost more than the whole
// deploy of a small site (issue 29: a 300-file deploy, whole process, ten times faster than 300
// single uploads). Every module the process loads is recorded by a load hook and checked here.

const exec = promisify(execFile);
const dist = path.dirname(path.dirname(path.dirname(bin)));
// As the loader names them (node_modules may be a link).
const nodeModules = realpathSync(path.join(path.dirname(dist), 'node_modules'));

/** A module that records the URL of every module the process loads, written out at exit. */
const RECORDER = `
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const urls = new Set();
registerHooks({ load(url, context, next) { urls.add(url); return next(url, context); } });
process.on('exit', () => {
  writeFileSync(process.env.LOADED_MODULES_FILE, [...urls].join('\\n'));
  writeFileSync(process.env.LOADED_MODULES_FILE + '.builtin', process.moduleLoadList.join('\\n'));
});
`;

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
});

describe('hostplane deploy: what it loads, what it asks', () => {
  let instance: Instance;
  let dir: string;
  let tmp: string;
  let apiKey: string;

  beforeAll(async () => {
    instance = await newInstance();
    await startServe(instance);
    const created = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'lean',
      '--email',
      'lean@example.com',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    apiKey = JSON.parse(created.stdout).apiKey as string;
    dir = await siteFolder({ 'index.html': '<h1>lean</h1>', 'css/site.css': 'body{}' });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'hostplane-loaded-'));
  });
  afterAll(async () => {
    await stopServe(instance);
    for (const d of [instance.dataDir, dir, tmp]) await rm(d, { recursive: true, force: true });
  });

  it('a whole deploy loads no server module, no package but its own (not zod), and not fetch (undici)', async () => {
    const list = path.join(tmp, 'loaded.txt');
    const recorder = path.join(tmp, 'recorder.mjs');
    await writeFile(recorder, RECORDER);
    const { stdout } = await exec(
      process.execPath,
      ['--import', pathToFileURL(recorder).href, bin, 'deploy', dir, '--json'],
      {
        env: {
          ...process.env,
          HOSTPLANE_API_KEY: apiKey,
          HOSTPLANE_API_URL: `http://localhost:${instance.port}`,
          LOADED_MODULES_FILE: list,
        },
      },
    );
    expect(JSON.parse(stdout)).toMatchObject({ success: true, uploaded_files: 2 });

    // HTTP through node:http, not fetch: fetch's implementation (undici, compiled on first use)
    // cost a cold process 40-100 ms before its first request left, a fifth of a small deploy.
    const builtins = (await readFile(`${list}.builtin`, 'utf8')).split('\n');
    expect(builtins.filter((m) => m.includes('undici'))).toEqual([]);

    const files = (await readFile(list, 'utf8'))
      .split('\n')
      .filter((url) => url.startsWith('file:'))
      .map((url) => fileURLToPath(url));
    const packages = new Set(
      files
        .filter((f) => f.startsWith(nodeModules + path.sep))
        .map((f) => {
          const [scope, name] = path.relative(nodeModules, f).split(path.sep);
          return scope!.startsWith('@') ? `${scope}/${name}` : scope!;
        }),
    );
    const ours = files
      .filter((f) => f.startsWith(path.join(dist, 'src') + path.sep))
      .map((f) => path.relative(path.join(dist, 'src'), f).split(path.sep).join('/'));
    // The ignore-file matcher only: the error registry builds its zod schemas (for the OpenAPI
    // document) only when given zod, which cost a deploy 30-100 ms of loading.
    expect([...packages].sort()).toEqual(['ignore']);
    const folders = new Set(ours.map((f) => f.split('/')[0]));
    expect([...folders].sort()).toEqual(['cli', 'errors', 'files', 'version.js']);
    // Of the files domain, its client face and the leaf modules it re-exports (no service, no routes).
    expect(ours.filter((f) => f.startsWith('files/')).sort()).toEqual([
      'files/client.js',
      'files/extensions.js',
      'files/limits.js',
      'files/paths.js',
    ]);
  });

  it('asks for the key check and the file types at once, then creates, uploads in one request, finalizes', async () => {
    // The proxy holds GET /api/v1/hosting-info until GET /api/v1/files/types has arrived too (at
    // most 5 s): asked one after the other, they would not overlap.
    const proxy = await pairingProxy(instance.port, '/api/v1/hosting-info', '/api/v1/files/types');
    await writeFile(path.join(dir, 'new.html'), `<p>${Date.now()}</p>`);
    try {
      const { stdout } = await exec(process.execPath, [bin, 'deploy', dir, '--json'], {
        env: { ...process.env, HOSTPLANE_API_KEY: apiKey, HOSTPLANE_API_URL: proxy.url },
      });
      expect(JSON.parse(stdout)).toMatchObject({ success: true });
      expect(proxy.overlapped()).toBe(true);
      const asked = proxy.requests().map((r) => r.replace(/[a-z2-7]{12}/, 'ID'));
      expect(asked.slice(0, 2).sort()).toEqual(['GET /api/v1/files/types', 'GET /api/v1/hosting-info']);
      // Whatever this folder's site lacks (a new page at least) goes in one bulk request.
      expect(asked.slice(2)).toEqual([
        'POST /api/v1/deploys',
        'POST /api/v1/deploys/ID/files',
        'POST /api/v1/deploys/ID/finalize',
      ]);
    } finally {
      await proxy.close();
    }
  });
});

describe('the compile cache', () => {
  it("keeps V8's compiled code of the CLI's modules in the user's cache folder, and uses it", async () => {
    // Node compiles every module of each short-lived CLI process again unless it keeps the code:
    // module.enableCompileCache, in $XDG_CACHE_HOME/hostplane (~/.cache/hostplane), never a
    // folder other users share.
    const cache = await mkdtemp(path.join(os.tmpdir(), 'hostplane-xdg-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: cache, NODE_COMPILE_CACHE: '' };
      delete env.NODE_DISABLE_COMPILE_CACHE;
      const first = await exec(process.execPath, [bin, '--version'], { env });
      const kept = await readdir(path.join(cache, 'hostplane', 'node-compile-cache'), { recursive: true });
      expect(kept.length).toBeGreaterThan(0);
      const again = await exec(process.execPath, [bin, '--version'], { env });
      expect(again.stdout).toBe(first.stdout);
      // NODE_DISABLE_COMPILE_CACHE=1 turns it off (Node's own switch).
      const off = await mkdtemp(path.join(os.tmpdir(), 'hostplane-xdg-'));
      await exec(process.execPath, [bin, '--version'], {
        env: { ...env, XDG_CACHE_HOME: off, NODE_DISABLE_COMPILE_CACHE: '1' },
      });
      expect(existsSync(path.join(off, 'hostplane'))).toBe(false);
      await rm(off, { recursive: true, force: true });
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });
});

/** A loopback proxy in front of `port` that holds requests for `first` until one for `second` came. */
async function pairingProxy(port: number, first: string, second: string) {
  const requests: string[] = [];
  let overlapped = false;
  let secondCame: () => void = () => undefined;
  const cameSecond = new Promise<void>((resolve) => (secondCame = resolve));
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.url === second) secondCame();
    const forward = () => {
      const upstream = http.request(
        { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (req.url !== first) return forward();
    const timeout = new Promise<boolean>((resolve) => setTimeout(resolve, 5000, false).unref());
    void Promise.race([cameSecond.then(() => true), timeout]).then((paired) => {
      overlapped = paired;
      forward();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    overlapped: () => overlapped,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
