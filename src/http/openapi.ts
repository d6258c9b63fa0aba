import { z } from 'zod';
import { errorBodySchema, errorDefinitions, type ErrorCode } from '../errors/index.js';
import {
  isPlatformAuth,
  queryParamDocs,
  type RouteDoc,
  type RouteLink,
  type RouteResponse,
} from './route.js';

type JsonSchema = Record<string, unknown>;

/** Points `#/$defs/X` (local to one generated schema) at `#/components/schemas/X` of the document. */
function refsToComponents<T>(value: T): T {
  if (Array.isArray(value)) return value.map(refsToComponents) as T;
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [
      key,
      key === '$ref' && typeof v === 'string'
        ? v.replace(/^#\/\$defs\//, '#/components/schemas/')
        : refsToComponents(v),
    ]),
  ) as T;
}

/**
 * JSON Schema of a zod schema, for embedding in the document. Schemas with an `id` become shared
 * `components.schemas` entries (the first generated one wins), so every `$ref` resolves.
 */
const toSchema = (schema: z.ZodType, io: 'input' | 'output', components: JsonSchema): JsonSchema => {
  const {
    $schema: _drop,
    $defs,
    ...rest
  } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
    override: ({ zodSchema, jsonSchema }) => {
      const documented = queryParamDocs.get(zodSchema);
      if (!documented) return;
      for (const key of Object.keys(jsonSchema)) delete (jsonSchema as JsonSchema)[key];
      Object.assign(jsonSchema, documented);
    },
  });
  for (const [id, def] of Object.entries($defs ?? {})) components[id] ??= tidy(refsToComponents(def));
  return tidy(refsToComponents(rest));
};

/** Drops zod's ±(2^53-1) bounds on plain integers: noise that says nothing to a client. */
function tidy<T>(value: T): T {
  if (Array.isArray(value)) return value.map(tidy) as T;
  if (!value || typeof value !== 'object') return value;
  const entries = Object.entries(value).filter(
    ([key, v]) =>
      !(
        (key === 'minimum' && v === Number.MIN_SAFE_INTEGER) ||
        (key === 'maximum' && v === Number.MAX_SAFE_INTEGER)
      ),
  );
  return Object.fromEntries(entries.map(([key, v]) => [key, tidy(v)])) as T;
}

/** The registry codes a route can answer: its own, plus those every route of its kind has. */
export function errorCodesOf(route: RouteDoc): ErrorCode[] {
  const codes = new Set<ErrorCode>();
  if (route.query || route.body || route.multipart || route.path.includes(':')) codes.add('INVALID_REQUEST');
  // SQLite kinds list their own 401 codes (SQLITE_TOKEN_INVALID, …): the platform's never answers there.
  if (route.auth !== 'none' && isPlatformAuth(route.auth)) codes.add('UNAUTHORIZED');
  if (route.body) ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'].forEach((c) => codes.add(c as ErrorCode));
  // Every body is held to the body deadline (src/http/body-deadline.ts).
  if (route.body || route.multipart || route.rawBody) codes.add('REQUEST_TIMEOUT');
  for (const code of route.errors ?? []) codes.add(code);
  // Every route needs the database or the blob store: either being away is a 503 (see errors/outage.ts).
  codes.add('DEPENDENCY_UNAVAILABLE');
  codes.add('INTERNAL');
  return [...codes];
}

/**
 * One response per status: the body of each code that answers with it (anyOf when several: codes
 * of one status may share a shape, e.g. every 401 is `{error: "Unauthorized", message}`).
 */
function errorResponses(route: RouteDoc, components: JsonSchema): Record<string, unknown> {
  if (route.ownErrorBodies) return {};
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(route)) {
    const status = errorDefinitions[code].status;
    if (route.responses[status]) continue; // the route documents its own body for this status
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const refs = codes.map((code) => {
      const id = `${code}_error`;
      components[id] ??= toSchema(errorBodySchema(code, z), 'output', components);
      return { $ref: `#/components/schemas/${id}` };
    });
    const headers =
      status === 429 || status === 503
        ? { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } }
        : undefined;
    responses[status] = {
      description: codes.map((code) => errorDefinitions[code].description).join('; '),
      ...(headers ? { headers } : {}),
      content: { 'application/json': { schema: refs.length === 1 ? refs[0] : { anyOf: refs } } },
    };
  }
  return responses;
}

/** `post /api/v1/files/upload` → `postApiV1FilesUpload`: stable, so links and clients can name it. */
export function operationIdOf(route: Pick<RouteDoc, 'method' | 'path'>): string {
  const openApiPath = route.path.replace(/:(\w+)/g, '{$1}');
  return `${route.method}${openApiPath.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`;
}

/** OpenAPI link objects; a link to a route that is not registered is a programming error. */
function linkObjects(from: RouteDoc, links: Record<string, RouteLink>, routes: RouteDoc[]): JsonSchema {
  return Object.fromEntries(
    Object.entries(links).map(([name, link]) => {
      const target = routes.find((r) => r.method === link.to.method && r.path === link.to.path);
      if (!target) {
        throw new Error(
          `link ${name} of ${from.method} ${from.path} points at ${link.to.method} ${link.to.path}, which is not registered`,
        );
      }
      return [
        name,
        {
          operationId: operationIdOf(target),
          ...(link.description ? { description: link.description } : {}),
          ...(link.parameters ? { parameters: link.parameters } : {}),
          ...(link.body ? { requestBody: link.body } : {}),
        },
      ];
    }),
  );
}

/** A documented success (or own-error) response: its body schema, example and links. */
function responseObject(
  route: RouteDoc,
  status: string,
  r: RouteResponse,
  routes: RouteDoc[],
  components: JsonSchema,
): JsonSchema {
  const mediaType = r.contentType ?? 'application/json';
  const schema = r.schema
    ? toSchema(r.schema, 'output', components)
    : r.contentType
      ? { type: 'string' }
      : undefined;
  // A secret's answer says it is never stored (the registry sends the header, see RouteDoc.secret).
  const noStore = route.secret && status.startsWith('2');
  const headers = { ...(noStore ? NO_STORE_HEADER : {}), ...r.headers };
  return {
    description: r.description,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(schema
      ? { content: { [mediaType]: { schema, ...(r.example !== undefined ? { example: r.example } : {}) } } }
      : {}),
    ...(r.links ? { links: linkObjects(route, r.links, routes) } : {}),
  };
}

/**
 * Query parameter examples in the form the document gives their schemas (the parsed value: an
 * integer for `per_page=10`), from the route's wire-form example; an invalid example throws.
 */
function queryExamples(route: RouteDoc): Record<string, unknown> {
  const wire = route.requestExample?.query;
  if (!wire || !route.query) return {};
  const parsed = route.query.parse(wire) as Record<string, unknown>;
  return Object.fromEntries(Object.keys(wire).map((name) => [name, parsed[name]]));
}

const NO_STORE_HEADER = {
  'Cache-Control': {
    description: 'The answer carries a secret: no browser, proxy or CDN may keep a copy.',
    required: true,
    schema: { type: 'string', const: 'no-store' },
  },
};

const securitySchemes = {
  ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
  Session: { type: 'http', scheme: 'bearer', description: 'An account session token' },
  SessionCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: '__Host-hp_session',
    description:
      'A browser session from POST /api/v1/account/sign-in with `"session": "cookie"` (named `hp_session` when the base URL is plain http). Every write it authenticates also needs the `X-CSRF-Token` header of its session.',
  },
  SqliteToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Sqlite-Token',
    description:
      'A scoped SQLite token from POST /api/v1/sqlite/auth/install; accepted only with an `Origin` of the site (its subdomain or custom domains)',
  },
  SqliteUserToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Sqlite-User-Token',
    description: 'An end-user session of the database, from POST /api/v1/sqlite/auth/login',
  },
};

// Alternatives are OR-ed; the schemes within one are all needed.
const securityFor: Record<RouteDoc['auth'], Array<Record<string, string[]>>> = {
  apiKey: [{ ApiKey: [] }],
  apiKeyOrSession: [{ ApiKey: [] }, { Session: [] }, { SessionCookie: [] }],
  session: [{ Session: [] }, { SessionCookie: [] }],
  none: [],
  sqliteToken: [{ SqliteToken: [] }],
  sqliteTokenMaybeUser: [{ SqliteToken: [] }, { SqliteToken: [], SqliteUserToken: [] }],
  sqliteUser: [{ SqliteToken: [], SqliteUserToken: [] }],
  sqliteUserOrApiKey: [
    { SqliteToken: [], ApiKey: [] },
    { SqliteToken: [], SqliteUserToken: [] },
  ],
};

/** OpenAPI 3.1 document generated from the registered routes' zod schemas. */
export function buildOpenApi(
  routes: RouteDoc[],
  serverUrl: string,
  extraComponents: ReadonlyMap<string, z.ZodType> = new Map(),
): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: JsonSchema = {};
  for (const [id, schema] of extraComponents) schemas[id] = toSchema(schema, 'output', schemas);
  for (const route of routes) {
    const openApiPath = route.path.replace(/:(\w+)/g, '{$1}');
    const parameters: unknown[] = [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => ({
      name,
      in: 'path',
      required: true,
      schema: route.params?.[name!] ?? { type: 'string' },
      ...(route.requestExample?.params?.[name!] ? { example: route.requestExample.params[name!] } : {}),
    }));
    if (route.query) {
      const query = toSchema(route.query, 'input', schemas) as {
        properties?: Record<string, JsonSchema>;
        required?: string[];
      };
      const examples = queryExamples(route);
      for (const [name, schema] of Object.entries(query.properties ?? {})) {
        parameters.push({
          name,
          in: 'query',
          required: query.required?.includes(name) ?? false,
          schema,
          ...(name in examples ? { example: examples[name] } : {}),
        });
      }
    }
    for (const [name, header] of Object.entries(route.headers ?? {}))
      parameters.push({
        name,
        in: 'header',
        required: header.required ?? false,
        description: header.description,
        schema: header.schema,
      });
    const operation: Record<string, unknown> = {
      operationId: operationIdOf(route),
      summary: route.summary,
      description: route.description,
      tags: route.tags,
      security: securityFor[route.auth],
      parameters,
      responses: {
        ...Object.fromEntries(
          Object.entries(route.responses).map(([status, r]) => [
            status,
            responseObject(route, status, r, routes, schemas),
          ]),
        ),
        ...errorResponses(route, schemas),
      },
    };
    const bodyExample =
      route.requestExample?.body !== undefined ? { example: route.requestExample.body } : {};
    if (route.body) {
      operation.requestBody = {
        required: route.bodyRequired ?? true,
        content: { 'application/json': { schema: toSchema(route.body, 'input', schemas), ...bodyExample } },
      };
    } else if (route.rawBody) {
      operation.requestBody = {
        required: route.rawBody.required ?? true,
        description: route.rawBody.description,
        content: { [route.rawBody.contentType]: { schema: { type: 'string', format: 'binary' } } },
      };
    } else if (route.multipart) {
      operation.requestBody = {
        required: true,
        content: {
          'multipart/form-data': { schema: toSchema(route.multipart, 'input', schemas), ...bodyExample },
        },
      };
    }
    (paths[openApiPath] ??= {})[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Hostplane hosting API',
      version: '1.0.0',
      description:
        'Static sites, files, folders, videos, storage quotas, temporary publishing, forms with their submissions and notification mail, and per-site SQLite databases with end-user accounts. ' +
        'A request whose target is in absolute-form (`GET http://host/path`) is served for the host it names, not its `Host` header (RFC 9112 section 3.2.2); ' +
        'an absolute target that is not an http(s) URL naming a host (another scheme, userinfo, no host) is answered 400 `{error: "Bad Request", message}` on every path.',
    },
    servers: [{ url: serverUrl }],
    components: { securitySchemes, schemas },
    paths,
  };
}
