import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bin, cli, newInstance, siteRequest, startServe, stopServe, type Instance } from '../support/cli.js';
import { connect, ok } from '../integration/mcp/support.js';

// The MCP server of the built binary (`npm run build` first): `hostplane serve`, a site made with
// the admin CLI, and an agent that deploys, previews, publishes and rolls back with only its key.

let instance: Instance;
let apiKey = '';

beforeAll(async () => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
  instance = await newInstance();
  await startServe(instance);
  const out = await cli(instance, [
    'admin',
    'create-site',
    '--slug',
    'agent',
    '--email',
    'a@example.com',
    '--json',
  ]);
  expect(out.code).toBe(0);
  apiKey = (JSON.parse(out.stdout) as { apiKey: string }).apiKey;
});
afterAll(async () => {
  if (instance) {
    await stopServe(instance);
    await rm(instance.dataDir, { recursive: true, force: true });
  }
});

it('an agent with only a key deploys a draft, publishes it and rolls back', async () => {
  const client = await connect(`http://127.0.0.1:${instance.port}`, { key: apiKey });
  const page = async () => (await siteRequest(instance, 'agent')).text();

  const first = await ok(client, 'deploy_files', {
    mode: 'replace',
    files: [{ path: 'index.html', content: 'one' }],
  });
  expect(first.url).toBe(`http://agent.localhost:${instance.port}`);
  expect(await page()).toBe('one');

  const draft = await ok(client, 'deploy_files', {
    mode: 'replace',
    files: [{ path: 'index.html', content: 'two' }],
    draft: true,
  });
  const previewHost = new URL(draft.url as string).host;
  expect(await (await siteRequest(instance, previewHost.split('.')[0]!)).text()).toBe('two');
  expect(await page()).toBe('one');

  await ok(client, 'publish_deploy', { deploy_id: draft.deploy.id });
  expect(await page()).toBe('two');
  await ok(client, 'restore_deploy', { deploy_id: first.deploy.id });
  expect(await page()).toBe('one');
  await client.close();

  const llms = await fetch(`http://127.0.0.1:${instance.port}/llms.txt`);
  expect(await llms.text()).toContain(`http://localhost:${instance.port}/mcp`);
});
