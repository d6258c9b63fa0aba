import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { loadConfig } from '../../../src/config/index.js';
import { filesModule, specFileTypes } from '../../../src/files/index.js';
import { RouteRegistry, UploadAdmission, type DomainModule, type RouteDoc } from '../../../src/http/index.js';
import { buildOpenApi, operationIdOf } from '../../../src/http/openapi.js';
import { platformModule } from '../../../src/platform/index.js';
import { publishModule } from '../../../src/publish/index.js';

// The routes' documentation only: the handlers are never called, so their services are stubs.
const config = loadConfig({ HOSTPLANE_DATA_DIR: '/nonexistent' });
const stub = {} as never;
const modules: DomainModule[] = [
  platformModule(stub),
  filesModule({
    config,
    platform: stub,
    // The routes' schemas name the server's file types.
    files: { types: specFileTypes } as never,
    deploys: stub,
    uploads: new UploadAdmission(config.uploads),
  }),
  publishModule({ config, publish: stub, limiter: stub, logger: stub }),
];
const registry = new RouteRegistry({ none: [], apiKey: [], apiKeyOrSession: [], session: [] });
for (const module of modules) module.routes?.(registry);
const routes = registry.docs;
const doc = buildOpenApi(routes, config.baseUrl, registry.components) as {
  paths: Record<string, Record<string, Operation>>;
};

interface Operation {
  operationId: string;
  security: Array<Record<string, string[]>>;
  parameters: Array<{ name: string; in: string; example?: unknown }>;
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
  responses: Record<
    string,
    { links?: Record<string, Link>; content?: Record<string, { example?: unknown }> }
  >;
}
interface Link {
  operationId: string;
  parameters?: Record<string, string>;
  requestBody?: Record<string, unknown>;
}

const label = (r: Pick<RouteDoc, 'method' | 'path'>) => `${r.method} ${r.path}`;
const operations = Object.values(doc.paths).flatMap((ops) => Object.values(ops));
const byId = new Map(operations.map((op) => [op.operationId, op]));
const operationOf = (r: RouteDoc) => byId.get(operationIdOf(r))!;

function expectValid(schema: z.ZodType, value: unknown, what: string): void {
  const result = schema.safeParse(value);
  expect(result.success, `${what}: ${result.error?.message ?? ''}`).toBe(true);
}

/** The value a `$response.body#/a/b` pointer names in `body`. */
function pointer(body: unknown, expression: string): unknown {
  const path = expression
    .replace(/^\$response\.body#/, '')
    .split('/')
    .slice(1);
  return path.reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], body);
}

describe('the OpenAPI document: descriptions, examples and links', () => {
  it('has every route of the three domains', () => {
    expect(routes.length).toBeGreaterThanOrEqual(15);
    expect(operations.length).toBe(routes.length);
  });

  it.each(routes.map((r) => [label(r), r] as const))('%s has a summary and a description', (_l, route) => {
    expect(route.summary.length).toBeGreaterThan(10);
    expect(route.description.length).toBeGreaterThan(80);
    expect(operationOf(route)).toMatchObject({ summary: route.summary, description: route.description });
  });

  it.each(routes.map((r) => [label(r), r] as const))(
    '%s has a request example valid against its schemas',
    (_l, route) => {
      const params = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
      const sendsSomething = params.length > 0 || route.query || route.body || route.multipart;
      if (!sendsSomething) return;
      const example = route.requestExample;
      expect(example, 'requestExample').toBeDefined();
      expect(Object.keys(example?.params ?? {}).sort()).toEqual(params.sort());
      if (route.query) expectValid(route.query, example?.query ?? {}, 'query example');
      if (route.body) {
        if (route.bodyRequired !== false) expect(example?.body).toBeDefined();
        expectValid(route.body, example?.body ?? {}, 'body example');
      }
      if (route.multipart) expectValid(route.multipart, example?.body, 'multipart example');
      // Examples that say something: a body route shows its body, a query route at least one parameter.
      if (route.body || route.multipart) expect(example?.body).toBeDefined();
      if (route.query && !route.body && !route.multipart)
        expect(Object.keys(example?.query ?? {}).length).toBeGreaterThan(0);
    },
  );

  it.each(routes.map((r) => [label(r), r] as const))(
    '%s has a success example valid against its response schema, and in the document',
    (_l, route) => {
      const ok = route.responses[200];
      // A route that answers 204 (no content) has no body to show.
      if (ok !== undefined || route.responses[204] === undefined) {
        expect(ok?.example, 'example of 200').toBeDefined();
        if (ok?.schema) expectValid(ok.schema, ok.example, '200 example');
        else expect(typeof ok?.example).toBe('string');
      }
      for (const [status, response] of Object.entries(route.responses)) {
        if (response.example === undefined) continue;
        if (response.schema) expectValid(response.schema, response.example, `${status} example`);
        const media = operationOf(route).responses[status]?.content ?? {};
        expect(Object.values(media)[0]?.example, `${status} in the document`).toEqual(response.example);
      }
    },
  );

  it('puts the request examples into the document, query values as their documented types', () => {
    const list = operationOf(routes.find((r) => r.path === '/api/v1/files/list')!);
    expect(list.parameters.find((p) => p.name === 'per_page')?.example).toBe(20);
    const upload = operationOf(routes.find((r) => r.path === '/api/v1/files/upload')!);
    expect(upload.requestBody?.content['application/json']).toHaveProperty('example.path', 'index.html');
    const view = operationOf(routes.find((r) => r.path === '/demo/view/:id')!);
    expect(view.parameters.find((p) => p.name === 'id')?.example).toEqual(expect.any(String));
  });

  const links = routes.flatMap((route) =>
    Object.entries(route.responses).flatMap(([status, response]) =>
      Object.entries(response.links ?? {}).map(
        ([name, link]) => [`${label(route)} → ${name}`, route, status, link] as const,
      ),
    ),
  );

  it.each(links)(
    'link %s names real parameters, body fields and response fields',
    (_l, route, status, link) => {
      const target = routes.find((r) => r.method === link.to.method && r.path === link.to.path)!;
      expect(target).toBeDefined();
      const targetOp = operationOf(target);
      const emitted = operationOf(route).responses[status]?.links ?? {};
      expect(Object.values(emitted).map((l) => l.operationId)).toContain(targetOp.operationId);
      const example = route.responses[Number(status)]?.example;
      for (const [name, expression] of Object.entries(link.parameters ?? {})) {
        const [where, param] = name.includes('.') ? name.split('.') : [undefined, name];
        if (where === 'header' && param === 'X-API-Key') {
          expect(targetOp.security).toContainEqual({ ApiKey: [] });
        } else {
          expect(targetOp.parameters.map((p) => `${p.in}.${p.name}`)).toContain(
            `${where ?? 'query'}.${param}`,
          );
        }
        expect(pointer(example, expression), expression).toBeDefined();
      }
      for (const [field, expression] of Object.entries(link.body ?? {})) {
        const schema = Object.values(targetOp.requestBody?.content ?? {})[0]?.schema;
        expect(Object.keys(schema?.properties ?? {})).toContain(field);
        expect(pointer(example, String(expression)), String(expression)).toBeDefined();
      }
    },
  );

  it('links the file and folder flows: upload → get, rename, delete; create-folder → rename-folder → delete-folder', () => {
    const targets = (path: string) =>
      Object.values(routes.find((r) => r.path === path)!.responses[200]!.links ?? {}).map(
        (l) => `${l.to.method} ${l.to.path}`,
      );
    expect(targets('/api/v1/files/upload')).toEqual(
      expect.arrayContaining([
        'get /api/v1/files/get',
        'post /api/v1/files/rename',
        'delete /api/v1/files/delete',
      ]),
    );
    expect(targets('/api/v1/files/rename')).toEqual(
      expect.arrayContaining(['get /api/v1/files/get', 'delete /api/v1/files/delete']),
    );
    expect(targets('/api/v1/files/create-folder')).toEqual(
      expect.arrayContaining(['post /api/v1/files/rename-folder', 'delete /api/v1/files/delete-folder']),
    );
    expect(targets('/api/v1/files/rename-folder')).toContain('delete /api/v1/files/delete-folder');
    expect(targets('/api/keys/generate-temp')).toContain('get /api/v1/hosting-info');
  });

  it('refuses a link to a route that is not registered', () => {
    const route: RouteDoc = {
      method: 'post',
      path: '/api/v1/things',
      summary: 'Create a thing',
      description: 'Creates a thing.',
      tags: ['Things'],
      auth: 'none',
      responses: {
        200: {
          description: 'Created',
          links: {
            GetThing: {
              to: { method: 'get', path: '/api/v1/things/:id' },
              parameters: { id: '$response.body#/id' },
            },
          },
        },
      },
    };
    expect(() => buildOpenApi([route], 'http://localhost')).toThrow(/GetThing.*not registered/);
    const target: RouteDoc = {
      ...route,
      method: 'get',
      path: '/api/v1/things/:id',
      responses: { 200: { description: 'A thing' } },
    };
    const built = buildOpenApi([route, target], 'http://localhost') as {
      paths: Record<string, Record<string, Operation>>;
    };
    expect(built.paths['/api/v1/things']?.post?.responses['200']?.links?.GetThing).toEqual({
      operationId: 'getApiV1ThingsId',
      parameters: { id: '$response.body#/id' },
    });
  });
});
