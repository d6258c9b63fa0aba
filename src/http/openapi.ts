import { z } from 'zod';
import { errorBodySchema, errorDefinitions, type ErrorCode } from '../errors/index.js';
import { queryParamDocs, type RouteDoc } from './route.js';

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
  if (route.query || route.body || route.multipart) codes.add('INVALID_REQUEST');
  if (route.auth !== 'none') codes.add('UNAUTHORIZED');
  if (route.body) ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'].forEach((c) => codes.add(c as ErrorCode));
  for (const code of route.errors ?? []) codes.add(code);
  codes.add('INTERNAL');
  return [...codes];
}

/** One response per status: the body of each code that answers with it (oneOf when several). */
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
      components[id] ??= toSchema(errorBodySchema(code), 'output', components);
      return { $ref: `#/components/schemas/${id}` };
    });
    const headers =
      status === 429 || status === 503
        ? { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } }
        : undefined;
    responses[status] = {
      description: codes.map((code) => errorDefinitions[code].description).join('; '),
      ...(headers ? { headers } : {}),
      content: { 'application/json': { schema: refs.length === 1 ? refs[0] : { oneOf: refs } } },
    };
  }
  return responses;
}

const securitySchemes = {
  ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
  Session: { type: 'http', scheme: 'bearer', description: 'An account session token' },
};

const securityFor: Record<RouteDoc['auth'], Array<Record<string, string[]>>> = {
  apiKey: [{ ApiKey: [] }],
  apiKeyOrSession: [{ ApiKey: [] }, { Session: [] }],
  session: [{ Session: [] }],
  none: [],
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
    const parameters: unknown[] = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (route.query) {
      const query = toSchema(route.query, 'input', schemas) as {
        properties?: Record<string, JsonSchema>;
        required?: string[];
      };
      for (const [name, schema] of Object.entries(query.properties ?? {})) {
        parameters.push({ name, in: 'query', required: query.required?.includes(name) ?? false, schema });
      }
    }
    const operation: Record<string, unknown> = {
      operationId: `${route.method}${openApiPath.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security: securityFor[route.auth],
      parameters,
      responses: {
        ...Object.fromEntries(
          Object.entries(route.responses).map(([status, r]) => [
            status,
            {
              description: r.description,
              ...(r.schema
                ? {
                    content: {
                      [r.contentType ?? 'application/json']: {
                        schema: toSchema(r.schema, 'output', schemas),
                      },
                    },
                  }
                : r.contentType
                  ? { content: { [r.contentType]: { schema: { type: 'string' } } } }
                  : {}),
            },
          ]),
        ),
        ...errorResponses(route, schemas),
      },
    };
    if (route.body) {
      operation.requestBody = {
        required: route.bodyRequired ?? true,
        content: { 'application/json': { schema: toSchema(route.body, 'input', schemas) } },
      };
    } else if (route.multipart) {
      operation.requestBody = {
        required: true,
        content: { 'multipart/form-data': { schema: toSchema(route.multipart, 'input', schemas) } },
      };
    }
    (paths[openApiPath] ??= {})[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Hostplane hosting API',
      version: '1.0.0',
      description: 'Static sites, files, folders, videos, storage quotas and temporary publishing.',
    },
    servers: [{ url: serverUrl }],
    components: { securitySchemes, schemas },
    paths,
  };
}
