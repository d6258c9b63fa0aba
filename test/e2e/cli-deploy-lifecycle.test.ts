import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequest, bin, cli, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';
import { forward, getOnHost, lostAnswerProxy, siteFolder } from '../support/deploy-folder.js';
import { eventually } from '../support/eventually.js';

// `hostplane deploy` around failures (issue 30): the deploy it started is cancelled when it is
// interrupted (SIGINT) or fails, its message is kept, its last line names both addresses, --json
// errors say what kind and which files, and a name that does not resolve is not retried.

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
});

/**
 * A proxy in front of the API that forwards everything but blob uploads (PUT): those it holds
 * (never answers) or refuses with `refuse`; `puts` resolves at the first PUT it sees.
 */
async function uploadProxy(port: number, refuse?: { status: number; body: unknown }) {
  let sawPut!: () => void;
  const puts = new Promise<void>((resolve) => (sawPut = resolve));
  const server = http.createServer((req, res) => {
    // A blob upload: a PUT of one blob, or the bulk POST of many (POST /api/v1/deploys/{id}/files).
    const upload =
      req.method === 'PUT' ||
      (req.method === 'POST' && /^\/api\/v1\/deploys\/[a-z2-7]{12}\/files(\?|$)/.test(req.url ?? ''));
    if (upload) {
      sawPut();
      req.resume();
      if (refuse) {
        res.writeHead(refuse.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(refuse.body));
      }
      return; // held: never answered
    }
    forward(port, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    puts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('hostplane deploy: lifecycle (PGlite)', () => {
  let instance: Instance;
  let apiKey: string;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  const run = (args: string[], extra: NodeJS.ProcessEnv = {}) => cli({ env: { ...env, ...extra } }, args);
  const deploysJson = async () => JSON.parse((await run(['deploys', '--json'])).stdout);

  beforeAll(async () => {
    instance = await newInstance();
    await startServe(instance);
    const created = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'life',
      '--email',
      'life@example.com',
      '--json',
    ]);
    apiKey = JSON.parse(created.stdout).apiKey as string;
    env = {
      ...instance.env,
      HOSTPLANE_API_KEY: apiKey,
      HOSTPLANE_API_URL: `http://localhost:${instance.port}`,
    };
    dir = await siteFolder({ 'index.html': '<h1>v1</h1>', 'about.html': '<p>about</p>' });
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });

  it('--message is kept with the deploy; the last line names the live address and the deploy own', async () => {
    const out = await run(['deploy', dir, '--message', 'First version (#1)']);
    expect(out.code, out.stderr).toBe(0);
    const id = /deploy ([a-z2-7]{12}):/.exec(out.stdout)![1]!;
    const last = out.stdout.trim().split('\n').at(-1)!;
    expect(last).toBe(
      `Deploy ${id} is live in ${/in ([\d.]+ s)/.exec(last)![1]}: http://life.localhost:${instance.port} (this deploy: http://${id}--life.localhost:${instance.port})`,
    );
    expect(out.stdout).toContain('2 added, 0 changed, 0 removed');
    const list = await deploysJson();
    expect(list.deploys[0]).toMatchObject({ id, message: 'First version (#1)' });
    const table = await run(['deploys']);
    expect(table.stdout).toMatch(/MESSAGE/);
    expect(table.stdout).toContain('First version (#1)');

    await writeFile(path.join(dir, 'index.html'), '<h1>v2</h1>');
    const json = await run(['deploy', dir, '--json', '--message', 'second']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      message: 'second',
      changes: { added: 0, changed: 1, removed: 0 },
      live_url: `http://life.localhost:${instance.port}`,
    });
    const long = await run(['deploy', dir, '--message', 'x'.repeat(501)]);
    expect(long.code).toBe(2);
  });

  it('--json errors carry a kind and the refused files as an array', async () => {
    const bad = await siteFolder({
      'index.html': 'x',
      'README.md': '# r',
      'big.pdf': Buffer.alloc(10 * 1024 * 1024 + 1),
    });
    try {
      const out = await run(['deploy', bad, '--json']);
      expect(out.code).toBe(1);
      const body = JSON.parse(out.stdout);
      expect(body).toMatchObject({ error: 'Files refused', kind: 'files_refused' });
      expect(body.files).toEqual([
        { path: 'README.md', reason: '.md files are not served by Hostplane', limit: false },
        { path: 'big.pdf', reason: expect.stringMatching(/over the 10 MB limit/), limit: true },
      ]);
      const key = await run(['deploy', dir, '--json'], { HOSTPLANE_API_KEY: 'hp_live_not-a-real-key' });
      expect(key.code).toBe(3);
      expect(JSON.parse(key.stdout)).toMatchObject({ kind: 'auth', error: 'Unauthorized' });
    } finally {
      await rm(bad, { recursive: true, force: true });
    }
  });

  it('a host name that does not resolve fails at once (ENOTFOUND is not retried)', async () => {
    const out = await run(['deploys', '--api', 'http://hostplane-test.invalid', '--json']);
    expect(out.code).toBe(5);
    expect(out.stderr).toContain('ENOTFOUND');
    expect(out.stderr).not.toMatch(/retrying/);
    expect(out.stderr).toMatch(/1 attempt\b/);
    expect(JSON.parse(out.stdout)).toMatchObject({ kind: 'unavailable' });
  });

  it('SIGINT mid-upload cancels the deploy it started, then exits 130', async () => {
    const proxy = await uploadProxy(instance.port);
    const before = (await deploysJson()).pagination.total_items as number;
    await writeFile(path.join(dir, 'index.html'), '<h1>interrupted</h1>');
    const child = spawn(process.execPath, [bin, 'deploy', dir, '--api', proxy.url], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stdout += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    try {
      await proxy.puts;
      const id = await eventually('the deploy id printed', () => /deploy ([a-z2-7]{12}):/.exec(stdout)?.[1]);
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(stdout).toContain(`cancelled deploy ${id}`);
      const got = await apiRequest(instance, `/api/v1/deploys/${id}`, { headers: { 'x-api-key': apiKey } });
      expect(got.status).toBe(404);
      expect((await deploysJson()).pagination.total_items).toBe(before);
      expect((await getOnHost(instance.port, `life.localhost`, '/')).text).toBe('<h1>v2</h1>');
    } finally {
      child.kill('SIGKILL');
      await proxy.close();
    }
  });

  it('a deploy that fails (an upload refused) is cancelled before the command exits', async () => {
    const proxy = await uploadProxy(instance.port, {
      status: 400,
      body: { error: 'Hash mismatch', message: 'refused by the test proxy' },
    });
    try {
      await writeFile(path.join(dir, 'index.html'), '<h1>refused</h1>');
      const out = await run(['deploy', dir, '--api', proxy.url]);
      expect(out.code).toBe(1);
      const id = /deploy ([a-z2-7]{12}):/.exec(out.stdout)![1]!;
      expect(out.stdout + out.stderr).toContain(`cancelled deploy ${id}`);
      await eventually('the deploy gone', async () => {
        const got = await apiRequest(instance, `/api/v1/deploys/${id}`, { headers: { 'x-api-key': apiKey } });
        return got.status === 404;
      });
    } finally {
      await proxy.close();
    }
  });

  it('a create whose answer is lost (connection reset) is sent again with its Idempotency-Key: one deploy, not two', async () => {
    // The create's answer is lost (the deploy exists, the CLI never hears of it); the repeat,
    // with the same key, is answered that deploy (replayed).
    const proxy = await lostAnswerProxy(
      instance.port,
      (req) => req.method === 'POST' && /^\/api\/v1\/deploys(\?|$)/.test(req.url ?? ''),
    );
    const before = (await deploysJson()).deploys as { id: string }[];
    try {
      await writeFile(path.join(dir, 'index.html'), '<h1>lost create</h1>');
      const out = await run(['deploy', dir, '--api', proxy.url, '--json']);
      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.stderr).toMatch(/retrying POST \/api\/v1\/deploys in [\d.]+ s \(attempt 2: ECONNRESET\)/);
      expect(proxy.statuses()).toEqual([200, 200]);
      const { id } = JSON.parse(out.stdout) as { id: string };
      const after = (await deploysJson()).deploys as { id: string; state: string }[];
      // Exactly one new deploy, the one the CLI finalized: the first create's.
      expect(after.filter((d) => !before.some((b) => b.id === d.id)).map((d) => d.id)).toEqual([id]);
      expect(after.filter((d) => d.state === 'uploading')).toEqual([]);
      expect((await getOnHost(instance.port, `life.localhost`, '/')).text).toBe('<h1>lost create</h1>');
    } finally {
      await proxy.close();
    }
  });
});
