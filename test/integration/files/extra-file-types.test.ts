import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { fileTypesWith } from '../../../src/files/index.js';
import { isAppError } from '../../../src/errors/index.js';
import {
  apiKeyHeader,
  rawRequest,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { deployClient, sha256 } from '../../support/deploys-api.js';

// What MkDocs Material, Vite and Astro builds emit beside the spec's types. The spec's list stays
// the default; HOSTPLANE_EXTRA_FILE_TYPES adds to it, for the files API, deploys and the document.

const SPEC = ['html', 'css', 'js', 'json', 'xml', 'txt', 'jpg', 'jpeg', 'png', 'gif', 'svg', 'webp', 'ico']
  .concat(['pdf', 'woff', 'woff2', 'ttf', 'otf'])
  .sort();
// The smallest valid WebAssembly module: magic and version.
const WASM = Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
const GZ = gzipSync(Buffer.from('{"search":"index"}'));
const AVIF = Buffer.from('00000020667479706176696600000000', 'hex');

const build: Record<string, string | Buffer> = {
  'index.html': '<script type="module" src="assets/app.mjs"></script>',
  'assets/app.mjs': 'export const a = 1;\n//# sourceMappingURL=app.mjs.map',
  'assets/app.mjs.map': '{"version":3,"sources":[],"mappings":""}',
  'site.webmanifest': '{"name":"Docs"}',
  'assets/engine.wasm': WASM,
  'img/hero.avif': AVIF,
  'search/index.json.gz': GZ,
};
const served: Record<string, string> = {
  'assets/app.mjs': 'text/javascript; charset=utf-8',
  'assets/app.mjs.map': 'application/json; charset=utf-8',
  'site.webmanifest': 'application/manifest+json; charset=utf-8',
  'assets/engine.wasm': 'application/wasm',
  'img/hero.avif': 'image/avif',
  'search/index.json.gz': 'application/gzip',
};

type Doc = {
  components: { schemas: Record<string, { enum?: string[] }> };
  paths: Record<string, Record<string, unknown>>;
};

async function typesOf(hp: TestHostplane, site: TestSite) {
  const res = await hp.request('/api/v1/files/types', { headers: apiKeyHeader(site) });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

function uploadPattern(doc: Doc): RegExp {
  const op = doc.paths['/api/v1/files/upload']!.post as {
    requestBody: { content: Record<string, { schema: { properties: { path: { pattern: string } } } }> };
  };
  return new RegExp(op.requestBody.content['application/json']!.schema.properties.path.pattern);
}

const upload = (hp: TestHostplane, site: TestSite, path: string, bytes: Buffer | string) =>
  hp.request('/api/v1/files/upload', {
    method: 'POST',
    headers: apiKeyHeader(site),
    json: { path, content: Buffer.from(bytes).toString('base64'), encoding: 'base64' },
  });

describe('file types on a server with the default list', () => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    site = await hp.createSite('types-default');
  });
  afterAll(() => hp?.stop());

  it('refuses the build types in uploads and deploys, and says it has the spec list only', async () => {
    const refused = await upload(hp, site, 'assets/app.mjs.map', '{}');
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'Invalid file type' });
    const client = deployClient(hp.port, site.apiKey);
    const create = await client.call('POST', '/api/v1/deploys', {
      files: { 'index.html': sha256('x'), 'engine.wasm': sha256(WASM) },
    });
    expect(create.status).toBe(400);
    expect(create.body.message).toMatch(/\.wasm/);

    const types = await typesOf(hp, site);
    expect([...(types.file_extensions as string[])].sort()).toEqual(SPEC);
    expect(types.extra_extensions).toEqual([]);
    expect(types.video_extensions).toEqual(['mp4', 'webm', 'ogg', 'mov']);
    const doc = (await (await hp.request('/api/v1/openapi.json')).json()) as Doc;
    expect(uploadPattern(doc).test('assets/app.mjs.map')).toBe(false);
    expect(doc.components.schemas.UploadExtension!.enum).not.toContain('map');
    expect(doc.paths['/api/v1/files/types']?.get).toBeDefined();
  });
});

describe('file types on a server whose operator allows the build types', () => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', {
      env: { HOSTPLANE_EXTRA_FILE_TYPES: 'map, mjs,webmanifest,wasm,.avif,GZ' },
    });
    site = await hp.createSite('types-extra');
  });
  afterAll(() => hp?.stop());

  it('lists the extras beside the spec list, with the type each is served with', async () => {
    const types = await typesOf(hp, site);
    expect(types.extra_extensions).toEqual(['map', 'mjs', 'webmanifest', 'wasm', 'avif', 'gz']);
    expect(types.file_extensions).toEqual(expect.arrayContaining([...SPEC, 'map', 'gz']));
    expect(types.content_types).toMatchObject({
      wasm: 'application/wasm',
      mjs: 'text/javascript; charset=utf-8',
    });
    const doc = (await (await hp.request('/api/v1/openapi.json')).json()) as Doc;
    expect(uploadPattern(doc).test('assets/app.mjs.map')).toBe(true);
    expect(uploadPattern(doc).test('shell.php')).toBe(false);
    expect(doc.components.schemas.UploadExtension!.enum).toEqual(expect.arrayContaining(['map', 'wasm']));
  });

  it('a deploy of a build folder goes live; each file is served with its own Content-Type', async () => {
    const client = deployClient(hp.port, site.apiKey);
    const files = Object.fromEntries(Object.entries(build).map(([p, c]) => [p, sha256(c)]));
    const { id, required } = await client.create(files);
    const byHash = new Map(Object.values(build).map((c) => [sha256(c), c]));
    for (const hash of required) expect((await client.put(id, hash, byHash.get(hash)!)).status).toBe(200);
    expect((await client.call('POST', `/api/v1/deploys/${id}/finalize`)).status).toBe(200);

    for (const [path, type] of Object.entries(served)) {
      const res = await rawRequest(hp.port, `/${path}`, {
        headers: { host: `types-extra.localhost:${hp.port}`, 'accept-encoding': 'gzip, br' },
      });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toBe(type);
      if (path.endsWith('.gz')) {
        // Served as the bytes it is: a download, never a Content-Encoding the client would undo.
        expect(res.headers.get('content-encoding')).toBeNull();
        expect(Buffer.from(await res.arrayBuffer())).toEqual(GZ);
      } else await res.arrayBuffer();
    }
  });

  it('the files API takes them too; a type outside both lists is still refused', async () => {
    expect((await upload(hp, site, 'more/other.js.map', '{}')).status).toBe(200);
    const got = await hp.request('/api/v1/files/get?path=more/other.js.map', { headers: apiKeyHeader(site) });
    expect(await got.json()).toMatchObject({ content: '{}' });
    const php = await upload(hp, site, 'shell.php', '<?php');
    expect(php.status).toBe(400);
    expect((await php.json()).message).toMatch(/Allowed: .*map.*gz/);
  });
});

describe('HOSTPLANE_EXTRA_FILE_TYPES is checked at start', () => {
  const refusal = (value: string) => {
    try {
      fileTypesWith(loadConfig({ HOSTPLANE_EXTRA_FILE_TYPES: value }).extraFileTypes);
      return undefined;
    } catch (err) {
      if (!isAppError(err)) throw err;
      return `${err.code}: ${err.message}`;
    }
  };

  it.each(['php', 'htm', 'xhtml', 'shtml', 'cgi', 'xsl', 'sqlite', 'exe'])(
    'refuses .%s: a type a server would run, a browser render as a page, or none it knows',
    (ext) =>
      expect(refusal(`map,${ext}`)).toMatch(
        new RegExp(`CONFIG_INVALID: .*\\.${ext} cannot be allowed.*can serve: map, mjs`, 's'),
      ),
  );

  it.each(['tar.gz', '../x', 'map;mjs', '*'])('refuses %j: extensions only', (value) =>
    expect(refusal(value)).toMatch(/CONFIG_INVALID: .*must be file extensions separated by commas/s),
  );

  it('a spec type given again changes nothing; empty is the spec list', () => {
    expect(refusal('html,svg')).toBeUndefined();
    expect(fileTypesWith(loadConfig({ HOSTPLANE_EXTRA_FILE_TYPES: 'html' }).extraFileTypes).extra).toEqual(
      [],
    );
    expect(loadConfig({}).extraFileTypes).toEqual([]);
  });
});
