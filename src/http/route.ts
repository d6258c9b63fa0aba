import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import { AppError, type ErrorCode } from '../errors/index.js';
import { describeIssues } from './validation.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
/** Credentials the platform checks before a route runs (its middleware, see `Authenticators`). */
export type PlatformAuthKind = 'apiKey' | 'apiKeyOrSession' | 'session' | 'none';
/**
 * Credentials of the SQLite API, documented here (security requirements of the OpenAPI document)
 * but checked by the SQLite domain's own middleware (token, Origin, user session), so the registry
 * adds nothing for them at run time:
 * - `sqliteToken`: `X-Sqlite-Token` (login);
 * - `sqliteTokenMaybeUser`: `X-Sqlite-Token`, plus `X-Sqlite-User-Token` when the token requires
 *   user auth (CRUD) or to name the session to end (logout);
 * - `sqliteUser`: `X-Sqlite-Token` and `X-Sqlite-User-Token` (me, change-password, user admin);
 * - `sqliteUserOrApiKey`: `X-Sqlite-Token` with the site's `X-API-Key` or an admin's
 *   `X-Sqlite-User-Token` (register).
 */
export type SqliteAuthKind = 'sqliteToken' | 'sqliteTokenMaybeUser' | 'sqliteUser' | 'sqliteUserOrApiKey';
export type AuthKind = PlatformAuthKind | SqliteAuthKind;

/** Whether the registry runs the platform's credential check for `kind` (see `SqliteAuthKind`). */
export const isPlatformAuth = (kind: AuthKind): kind is PlatformAuthKind =>
  kind === 'apiKey' || kind === 'apiKeyOrSession' || kind === 'session' || kind === 'none';

/**
 * A call that an answer makes possible, documented as an OpenAPI link (generated clients and the
 * fuzzer's stateful phase follow them), e.g. upload → get the file at the `path` it answered:
 *
 *     links: { GetFile: { to: { method: 'get', path: '/api/v1/files/get' },
 *                         parameters: { path: '$response.body#/path' } } }
 *
 * Values are OpenAPI runtime expressions (`$response.body#/form/id`, `$request.query.site_id`).
 */
export interface RouteLink {
  /** The target route, as registered (Express path: `/api/v1/forms/:id`). */
  to: { method: Method; path: string };
  description?: string;
  /** Target parameters by name (path, query or header; `query.page` to name the place). */
  parameters?: Record<string, string>;
  /** Fields of the target's JSON body; the client (or fuzzer) fills in the others. */
  body?: Record<string, unknown>;
}

/** A documented header: of a request (a parameter `in: header`) or of an answer. */
export interface HeaderDoc {
  description: string;
  /** JSON Schema of its value. */
  schema: Record<string, unknown>;
  /** A request header: whether the route needs it (default false). */
  required?: boolean;
}

export interface RouteResponse {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  /** Headers this answer may carry, by name. */
  headers?: Record<string, HeaderDoc>;
  /** A typical body; tests check it against `schema`. */
  example?: unknown;
  /** Calls this answer makes possible, by link name (CamelCase, unique within the response). */
  links?: Record<string, RouteLink>;
}

export interface RouteDoc {
  method: Method;
  /** Express path, e.g. `/api/v1/forms/:id`; documented as `/api/v1/forms/{id}`. */
  path: string;
  /** One line: what the operation does. */
  summary: string;
  /** The reference's prose (CommonMark): what it does, what it changes, its limits. */
  description: string;
  tags: string[];
  auth: AuthKind;
  /**
   * The route answers a secret (a key, a token, a session, a TOTP secret, recovery codes): every
   * answer of it, refusals too, is sent with `Cache-Control: no-store`, set before anything else
   * runs, and its successes document that header. Not for raw routes (their answers skip Express).
   */
  secret?: boolean;
  /** Registry codes this route may answer besides the ones every route of its kind has. */
  errors?: ErrorCode[];
  /** The route documents every error body itself in `responses` (the publish endpoints' shape). */
  ownErrorBodies?: boolean;
  /** Whether a JSON body must be sent (default true when `body` is given). */
  bodyRequired?: boolean;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Documented only: a multipart body, described by this schema. */
  multipart?: z.ZodType;
  /** Documented only: a raw body (the handler reads the stream), e.g. a blob's bytes. */
  rawBody?: { contentType: string; description: string; required?: boolean };
  /** Request headers the route reads (documented only: the handler checks them), by name. */
  headers?: Record<string, HeaderDoc>;
  /** JSON Schemas of the path parameters, by name (default: a string), e.g. `pathId('The form')`. */
  params?: Record<string, Record<string, unknown>>;
  /**
   * A typical request: path parameters, the query string as sent (`{page: '2'}`) and the body;
   * tests check each part against `query`, `body` or `multipart`.
   */
  requestExample?: { params?: Record<string, string>; query?: Record<string, string>; body?: unknown };
  responses: Record<number, RouteResponse>;
}

export interface Route<Q, B, A = never> extends RouteDoc {
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  middleware?: RequestHandler[];
  handler: (ctx: { req: Request; res: Response; query: Q; body: B }) => Promise<void> | void;
  /** The route may also be served on the raw fast path, ahead of Express (raw-dispatch.ts). */
  raw?: RawServing<A, B>;
}

/**
 * How a route is served without Express, with the same answers as its Express route: `gate`
 * admits the call (its refusal is answered on the route, with its registry body), then `handler`
 * answers 200 with what it returns. No query string is parsed; a body only with `bodyLimit`.
 */
export interface RawServing<A, B> {
  gate: RawGate<A>;
  /** The JSON body's limit in bytes: the same as the route's Express body parser. */
  bodyLimit?: number;
  /**
   * The body's usual shape checked by hand: what the route's schema would make of it, or
   * undefined to let the schema decide (and word the refusal). Never accepts what the schema refuses.
   */
  quickBody?: (body: unknown) => B | undefined;
  handler(admitted: A, body: B, req: IncomingMessage): Promise<unknown>;
}

/** The admission of raw calls, shared by the routes of one credential (see RawServing). */
export interface RawGate<A> {
  /**
   * Admits a call before its body is read: at once when it can (e.g. a credential in memory), else
   * a promise; a throw or a rejection is the refusal.
   */
  admit(req: IncomingMessage, res: ServerResponse): A | Promise<A>;
  /**
   * Sends an admitted call on when another process answers it (e.g. the shard that owns its
   * data), streaming that answer back: false when it is served here (known at once), else a
   * promise of whether it was sent on. Runs in the route's lifecycle; a rejection is answered there.
   */
  sendOn?(req: IncomingMessage, res: ServerResponse, admitted: A): false | Promise<boolean>;
  /**
   * Leaves the admission on the request for the route's Express middleware, which then admits
   * nothing again: a body the raw reader cannot read (compressed, not UTF-8) goes to Express.
   */
  carry(req: IncomingMessage, admitted: A): void;
}

/** A route the raw dispatcher serves (see RawServing). */
export interface RawRouteEntry {
  method: Method;
  path: string;
  body?: z.ZodType;
  raw: RawServing<unknown, unknown>;
}

/** Collects routes so the same zod schemas validate requests and generate /api/v1/openapi.json. */
export class RouteRegistry {
  readonly docs: RouteDoc[] = [];
  /** The routes that may also be served on the raw fast path (raw-dispatch.ts builds it from these). */
  readonly raw: RawRouteEntry[] = [];
  /** Schemas documented on their own (e.g. the allowed extensions as an enum), by component id. */
  readonly components = new Map<string, z.ZodType>();

  constructor(private readonly authMiddleware: Record<PlatformAuthKind, RequestHandler[]>) {}

  add<Q = undefined, B = undefined, A = never>(router: Router, route: Route<Q, B, A>): void {
    const { handler, middleware = [], raw, ...doc } = route;
    this.docs.push(doc);
    if (raw) {
      // The fast path runs the gate only: no platform authenticator, path parameter or query.
      if (
        isPlatformAuth(route.auth) ||
        route.path.includes(':') ||
        route.query ||
        (route.body !== undefined) !== (raw.bodyLimit !== undefined) ||
        route.secret
      )
        throw new Error(
          `${route.path}: a raw route is admitted by its gate (no platform auth), has a literal path, ` +
            'no query, a body limit with its body, and answers no secret',
        );
      this.raw.push({ method: route.method, path: route.path, body: route.body, raw });
    }
    const validate = async (req: Request, res: Response, next: NextFunction) => {
      try {
        const query = route.query ? parseOrThrow(route.query, req.query, 'query') : (undefined as Q);
        const body = route.body ? parseOrThrow(route.body, req.body ?? {}, 'body') : (undefined as B);
        await handler({ req, res, query, body });
      } catch (err) {
        next(err);
      }
    };
    // Credentials first: a request without them gets its 401 before any body is read or parsed.
    // SQLite kinds are checked by the route's own middleware (the domain's token and Origin check).
    const auth = isPlatformAuth(route.auth) ? this.authMiddleware[route.auth] : [];
    const first = route.secret ? [noStore] : [];
    router[route.method](route.path, ...first, ...auth, ...middleware, validate);
  }
}

/**
 * `Cache-Control: no-store` on the answer: no browser, proxy or CDN keeps a copy of it. Routes of
 * the registry get it with `secret: true`; an answer outside the registry that may carry a secret
 * (an MCP tool's result) mounts it.
 */
export const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'no-store');
  next();
};

/**
 * Answers 405 with `Allow` for a documented path asked with a method it does not have, and
 * OPTIONS with its `Allow` (CORS preflights pass on to their routes). Mounted before the routes:
 * `/api/v1/forms/usage` is its own path, not `/api/v1/forms/:id` with id "usage", so the most
 * literal documented path wins (fewest parameters).
 */
export function methodNotAllowed(docs: readonly RouteDoc[]): RequestHandler {
  const byPath = new Map<string, { pattern: RegExp; methods: Set<string>; params: number }>();
  for (const doc of docs) {
    const entry = byPath.get(doc.path) ?? {
      pattern: new RegExp(`^${doc.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '[^/]+')}/?$`),
      methods: new Set<string>(),
      params: (doc.path.match(/:\w+/g) ?? []).length,
    };
    entry.methods.add(doc.method.toUpperCase());
    if (doc.method === 'get') entry.methods.add('HEAD');
    byPath.set(doc.path, entry);
  }
  const entries = [...byPath.values()].sort((a, b) => a.params - b.params);
  return (req, res, next) => {
    if (req.method === 'OPTIONS' && req.get('access-control-request-method')) return next();
    const entry = entries.find((e) => e.pattern.test(req.path));
    if (!entry || entry.methods.has(req.method)) return next();
    const allow = [...entry.methods, 'OPTIONS'];
    if (req.method === 'OPTIONS') return void res.set('Allow', allow.join(', ')).status(204).end();
    next(new AppError('METHOD_NOT_ALLOWED', { method: req.method, allow }));
  };
}

/** A path parameter that is a positive 32-bit id. */
export const pathId = (description: string) => ({
  type: 'integer',
  minimum: 1,
  maximum: 2_147_483_647,
  description,
});

export function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  // reportInput: the issue carries the value, so messages can say "must be a number, not a string".
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  throw new AppError('INVALID_REQUEST', { message: describeIssues(result.error, where) });
}

/**
 * How a query parameter is documented when its wire form (a string) is not what it means: the
 * JSON Schema of the value it is parsed into. openapi.ts uses these in place of the string schema.
 */
export const queryParamDocs = z.registry<Record<string, unknown>>();

/** Query-string integers: digits only, so `1e3`, `0x10` and ` 5` are refused rather than coerced. */
export const queryInt = (opts: { min: number; max?: number; default: number }) => {
  let int = z.number().int().min(opts.min);
  if (opts.max !== undefined) int = int.max(opts.max);
  const schema = z
    .string()
    .regex(/^\d{1,15}$/, 'must be a whole number')
    .transform(Number)
    .pipe(int)
    .optional()
    .transform((v) => v ?? opts.default);
  // Documented as the integer it is checked against (same bounds), with its default.
  const { $schema: _drop, ...documented } = z.toJSONSchema(int);
  schema.register(queryParamDocs, { ...documented, default: opts.default });
  return schema;
};

/** An optional query-string id (a positive 32-bit integer), documented as an integer. */
export const queryId = (description: string) => {
  const int = z.number().int().min(1).max(2_147_483_647);
  const schema = z
    .string()
    .regex(/^\d{1,10}$/, 'must be a whole number')
    .transform(Number)
    .pipe(int)
    .optional()
    .describe(description);
  const { $schema: _drop, ...documented } = z.toJSONSchema(int);
  schema.register(queryParamDocs, { ...documented, description });
  return schema;
};
