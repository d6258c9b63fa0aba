import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequest, bin, cli, newInstance, startServe, stopServe, type Instance } from '../support/cli.js';
import { forward, getOnHost, lostAnswerProxy, siteFolder } from '../support/deploy-folder.js';

// The switches of the deploy commands (finalize, publish, restore) when the answer to one that
// worked is lost on the way back (a connection reset after the server switched): the command
// reports the switch it made, never a failure, and the switch is made once; when another deploy
// went live meanwhile, it fails saying so.

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
});

/** A proxy that forwards everything but the first request matching `drop`: that one it reads, then resets, never sent on. */
async function droppingProxy(port: number, drop: (req: http.IncomingMessage) => boolean) {
  let dropped = false;
  const server = http.createServer((req, res) => {
    if (dropped || !drop(req)) return forward(port, req, res);
    dropped = true;
    req.resume();
    req.on('end', () => req.socket.resetAndDestroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const switchOf = (action: string) => (req: http.IncomingMessage) =>
  req.method === 'POST' && new RegExp(`^/api/v1/deploys/[a-z2-7]{12}/${action}(\\?|$)`).test(req.url ?? '');
/** Switches the server made: its 200s to the switching requests. */
const switches = (statuses: number[]) => statuses.filter((s) => s === 200).length;

describe('hostplane deploy, publish, rollback: a switch whose answer is lost (PGlite)', () => {
  let instance: Instance;
  let apiKey: string;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  const run = (args: string[]) => cli({ env }, args);
  const page = async () => (await getOnHost(instance.port, 'switch.localhost', '/')).text;
  /** Deploys the folder with index.html as `html` (directly, no proxy); its id. */
  const deploy = async (html: string, ...flags: string[]) => {
    await writeFile(path.join(dir, 'index.html'), html);
    const out = await run(['deploy', dir, '--json', ...flags]);
    expect(out.code, out.stderr).toBe(0);
    return JSON.parse(out.stdout).id as string;
  };
  /** Restores a deploy through the API (another client's switch). */
  const restore = async (id: string) => {
    const res = await apiRequest(instance, `/api/v1/deploys/${id}/restore`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey },
    });
    expect(res.status).toBe(200);
  };

  beforeAll(async () => {
    instance = await newInstance();
    await startServe(instance);
    const created = await cli(instance, [
      'admin',
      'create-site',
      '--slug',
      'switch',
      '--email',
      'switch@example.com',
      '--json',
    ]);
    apiKey = JSON.parse(created.stdout).apiKey as string;
    env = {
      ...instance.env,
      HOSTPLANE_API_KEY: apiKey,
      HOSTPLANE_API_URL: `http://localhost:${instance.port}`,
    };
    dir = await siteFolder({ 'index.html': '<h1>v1</h1>' });
  });
  afterAll(async () => {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  });

  it('publish: the draft went live once and the command says so (exit 0)', async () => {
    await deploy('<h1>before the draft</h1>');
    const draft = await deploy('<h1>draft</h1>', '--draft');
    const proxy = await lostAnswerProxy(instance.port, switchOf('publish'));
    try {
      const out = await run(['publish', draft, '--api', proxy.url]);
      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.stdout).toContain(`Published: deploy ${draft}`);
      expect(out.stdout).toMatch(/answer .*lost/);
      expect(await page()).toBe('<h1>draft</h1>');
      expect(switches(proxy.statuses())).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('rollback: the earlier deploy went live once and the command says so (exit 0)', async () => {
    const earlier = await deploy('<h1>earlier</h1>');
    await deploy('<h1>later</h1>');
    const proxy = await lostAnswerProxy(instance.port, switchOf('restore'));
    try {
      const out = await run(['rollback', '--api', proxy.url]);
      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.stdout).toContain(`Rolled back: deploy ${earlier}`);
      expect(await page()).toBe('<h1>earlier</h1>');
      expect(switches(proxy.statuses())).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('deploy: the finalize went live once and the command says so (exit 0)', async () => {
    const proxy = await lostAnswerProxy(instance.port, switchOf('finalize'));
    try {
      await writeFile(path.join(dir, 'index.html'), '<h1>finalized</h1>');
      const out = await run(['deploy', dir, '--api', proxy.url]);
      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.stdout).toMatch(/Deploy [a-z2-7]{12} is live/);
      expect(await page()).toBe('<h1>finalized</h1>');
      expect(switches(proxy.statuses())).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('deploy: when another deploy went live before the answer was heard, it fails saying so', async () => {
    const other = await deploy('<h1>other</h1>');
    await deploy('<h1>current</h1>');
    const proxy = await lostAnswerProxy(instance.port, switchOf('finalize'), () => restore(other));
    try {
      await writeFile(path.join(dir, 'index.html'), '<h1>replaced meanwhile</h1>');
      const out = await run(['deploy', dir, '--api', proxy.url]);
      expect(out.code, out.stdout + out.stderr).toBe(1);
      expect(out.stderr).toMatch(/is not live: another deploy went live since/);
      expect(out.stdout).not.toMatch(/is live in/);
      expect(await page()).toBe('<h1>other</h1>');
    } finally {
      await proxy.close();
    }
  });

  it('publish: a request reset before it reached the server is sent again once the deploy shows untouched', async () => {
    const draft = await deploy('<h1>second draft</h1>', '--draft');
    const proxy = await droppingProxy(instance.port, switchOf('publish'));
    try {
      const out = await run(['publish', draft, '--api', proxy.url]);
      expect(out.code, out.stdout + out.stderr).toBe(0);
      expect(out.stdout).toContain(
        `deploy ${draft} is unchanged: sending POST /api/v1/deploys/${draft}/publish again`,
      );
      expect(out.stdout).toContain(`Published: deploy ${draft}`);
      expect(await page()).toBe('<h1>second draft</h1>');
    } finally {
      await proxy.close();
    }
  });

  it('publish: a 409 on the first attempt is a real conflict and stays a failure', async () => {
    const published = await deploy('<h1>published</h1>');
    const out = await run(['publish', published]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`Deploy ${published} is published already`);
  });
});
