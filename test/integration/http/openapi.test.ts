import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backends,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

type Json = Record<string, unknown>;

/** Resolves a local JSON pointer (`#/a/b`) against a document; undefined when it leads nowhere. */
function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = (node as Json)[key];
  }
  return node;
}

/** Every `$ref` string anywhere in a JSON value. */
function refsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => refsIn(v, found));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') found.push(v);
      else refsIn(v, found);
    }
  }
  return found;
}

describe.each(backends)('operational endpoints (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;

  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('ops');
    await upload(hp, site, 'index.html', '<h1>ops</h1>');
  });
  afterAll(() => hp?.stop());

  describe('GET /api/v1/openapi.json', () => {
    let doc: Json;
    let paths: Record<string, Record<string, Json>>;
    beforeAll(async () => {
      const res = await hp.request('/api/v1/openapi.json');
      expect(res.status).toBe(200);
      doc = (await res.json()) as Json;
      paths = doc.paths as typeof paths;
    });

    it('is an OpenAPI 3.1 document', () => {
      expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    });

    it('describes interface version 1.0.0', () => {
      expect((doc.info as Json).version).toBe('1.0.0');
    });

    const inScope: Array<[string, string]> = [
      ['get', '/api/v1/files/list'],
      ['get', '/api/v1/files/get'],
      ['post', '/api/v1/files/upload'],
      ['post', '/api/v1/files/rename'],
      ['delete', '/api/v1/files/delete'],
      ['post', '/api/v1/files/create-folder'],
      ['post', '/api/v1/files/rename-folder'],
      ['delete', '/api/v1/files/delete-folder'],
      ['get', '/api/v1/files/storage-limits'],
      ['get', '/api/v1/hosting-info'],
      ['post', '/api/v1/videos/upload'],
      ['post', '/api/keys/generate-temp'],
      ['post', '/ai/publish'],
      ['post', '/demo/api/publish'],
    ];
    it.each(inScope)('documents %s %s', (method, path) => {
      expect(paths[path]?.[method]).toBeDefined();
    });

    it('documents 408 on every operation that reads a body (the body deadline)', () => {
      const withBody = Object.entries(paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op.requestBody !== undefined)
          .map(([method, op]) => [`${method} ${path}`, op.responses as Json] as const),
      );
      expect(withBody.length).toBeGreaterThan(20);
      for (const [name, responses] of withBody) expect(responses['408'], name).toBeDefined();
    });

    it('documents per_page from its zod schema: an integer of at most 100', () => {
      const parameters = paths['/api/v1/files/list']?.get?.parameters as Array<{
        name: string;
        schema: Json;
      }>;
      const perPage = parameters.find((p) => p.name === 'per_page');
      expect(perPage?.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 100 });
    });

    it('documents site_id as an optional positive integer', () => {
      const parameters = paths['/api/v1/files/list']?.get?.parameters as Array<{
        name: string;
        required: boolean;
        schema: Json;
      }>;
      const siteId = parameters.find((p) => p.name === 'site_id');
      expect(siteId?.required).toBe(false);
      expect(siteId?.schema).toMatchObject({ type: 'integer', minimum: 1 });
    });

    it('documents expires_in of generate-temp with its zod bounds', () => {
      const body = paths['/api/keys/generate-temp']?.post?.requestBody as Json;
      const schema = (body.content as Record<string, { schema: Json }>)['application/json']?.schema;
      const expiresIn = (schema?.properties as Record<string, Json>).expires_in;
      expect(expiresIn).toMatchObject({ type: 'integer', maximum: 86400, default: 3600 });
    });

    it('documents html as a required string of /ai/publish', () => {
      const body = paths['/ai/publish']?.post?.requestBody as Json;
      const schema = (body.content as Record<string, { schema: Json }>)['application/json']?.schema;
      expect(schema?.required).toContain('html');
      expect((schema?.properties as Record<string, Json>).html).toMatchObject({ type: 'string' });
    });

    it('declares the API key on files endpoints and the session on generate-temp', () => {
      expect(paths['/api/v1/files/upload']?.post?.security).toContainEqual({ ApiKey: [] });
      expect(paths['/api/keys/generate-temp']?.post?.security).toEqual([
        { Session: [] },
        { SessionCookie: [] },
      ]);
      expect(paths['/ai/publish']?.post?.security).toEqual([]);
    });

    it('documents a 503 on every operation (a database or blob store away)', () => {
      const operations = Object.entries(paths).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => ({ name: `${method} ${path}`, op })),
      );
      expect(operations.length).toBeGreaterThan(20);
      for (const { name, op } of operations) expect((op.responses as Json)['503'], name).toBeDefined();
      const list = (paths['/api/v1/files/list']?.get?.responses as Record<string, Json>)['503'];
      expect(list?.headers).toHaveProperty('Retry-After');
      expect(JSON.stringify(list)).toContain('DEPENDENCY_UNAVAILABLE_error');
    });

    it('has only $refs that resolve inside the document', () => {
      const refs = refsIn(doc);
      expect(refs.length).toBeGreaterThan(0);
      for (const ref of new Set(refs)) expect(resolvePointer(doc, ref), ref).toBeDefined();
    });
  });
});
