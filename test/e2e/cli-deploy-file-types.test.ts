import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, cli, newInstance, siteRequest, startServe, stopServe, type Instance } from '../support/cli.js';
import { forward, siteFolder } from '../support/deploy-folder.js';

// `hostplane deploy` checks a folder against the server's own list of file types (GET
// /api/v1/files/types), so a stock MkDocs Material build deploys with no ignore file where the
// operator allows its types, and is refused before anything is sent where they are not.

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` first`);
});

const WASM = Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
/** What `mkdocs build` with Material writes (trimmed), plus a Vite-style module and a wasm file. */
const mkdocsSite = {
  'index.html':
    '<link rel="manifest" href="site.webmanifest"><script src="assets/javascripts/bundle.min.js"></script>',
  '404.html': '<h1>404</h1>',
  'sitemap.xml': '<urlset/>',
  'sitemap.xml.gz': gzipSync('<urlset/>'),
  'search/search_index.json': '{"docs":[]}',
  'assets/javascripts/bundle.min.js': 'console.log(1)\n//# sourceMappingURL=bundle.min.js.map',
  'assets/javascripts/bundle.min.js.map': '{"version":3,"mappings":""}',
  'assets/javascripts/workers/search.mjs': 'export {}',
  'assets/stylesheets/main.css': 'body{}',
  'assets/stylesheets/main.css.map': '{"version":3,"mappings":""}',
  'assets/images/favicon.png': Buffer.from([0x89, 0x50, 0x4e, 0x47]),
  'assets/engine.wasm': WASM,
  'site.webmanifest': '{"name":"Docs"}',
};

async function siteOn(instance: Instance, slug: string, apiUrl = `http://localhost:${instance.port}`) {
  const created = await cli(instance, [
    'admin',
    'create-site',
    '--slug',
    slug,
    '--email',
    `${slug}@example.com`,
    '--json',
  ]);
  expect(created.code, created.stderr).toBe(0);
  const apiKey = JSON.parse(created.stdout).apiKey as string;
  return (args: string[], url = apiUrl) =>
    cli({ env: { ...instance.env, HOSTPLANE_API_KEY: apiKey, HOSTPLANE_API_URL: url } }, args);
}

/** A server older than GET /api/v1/files/types: that route is a 404, the rest goes through. */
async function olderServer(port: number) {
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith('/api/v1/files/types')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: 'Not found', message: 'No such route' }));
    }
    forward(port, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe('hostplane deploy and the server’s file types', () => {
  const instances: Instance[] = [];
  let dir: string;
  beforeAll(async () => {
    dir = await siteFolder(mkdocsSite);
  });
  afterAll(async () => {
    for (const instance of instances) {
      await stopServe(instance);
      await rm(instance.dataDir, { recursive: true, force: true });
    }
    await rm(dir, { recursive: true, force: true });
  });

  it('a stock MkDocs build deploys with no ignore file when the operator allows its types', async () => {
    const instance = await newInstance({ HOSTPLANE_EXTRA_FILE_TYPES: 'map,mjs,webmanifest,wasm,avif,gz' });
    instances.push(instance);
    await startServe(instance);
    const deploy = await siteOn(instance, 'docs');
    const out = await deploy(['deploy', dir]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/13 files/);
    const wasm = await siteRequest(instance, 'docs', '/assets/engine.wasm');
    expect(wasm.status).toBe(200);
    expect(wasm.headers.get('content-type')).toBe('application/wasm');
    expect(Buffer.from(await wasm.arrayBuffer())).toEqual(WASM);
    const map = await siteRequest(instance, 'docs', '/assets/javascripts/bundle.min.js.map');
    expect(map.headers.get('content-type')).toBe('application/json; charset=utf-8');
    await map.arrayBuffer();

    // The same server seen through an older API (no list to read): the spec's list, refused locally.
    const older = await olderServer(instance.port);
    try {
      const refused = await deploy(['deploy', dir], older.url);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('bundle.min.js.map: .map files are not served by Hostplane');
    } finally {
      await older.close();
    }
  });

  it('on a server with the spec list only, the folder is refused before anything is sent', async () => {
    const instance = await newInstance();
    instances.push(instance);
    await startServe(instance);
    const deploy = await siteOn(instance, 'plain');
    const out = await deploy(['deploy', dir]);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/6 files cannot be deployed; nothing was sent/);
    expect(out.stderr).toContain('engine.wasm: .wasm files are not served by Hostplane');
    expect(out.stderr).toContain('HOSTPLANE_EXTRA_FILE_TYPES');
    expect((await siteRequest(instance, 'plain', '/')).status).toBe(404);
  });
});
