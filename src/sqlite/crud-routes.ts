import type { IncomingMessage } from 'node:http';
import { Router, type Request, type Response } from 'express';
import type { ErrorCode } from '../errors/index.js';
import { JsonText, jsonBody, type RawServing, type RouteRegistry } from '../http/index.js';
import { grantOf, scopedToken } from './access.js';
import { runCrud, type CrudOp } from './crud-ops.js';
import { scopedGate } from './fast-path.js';
import type { Grant, TokenGrants } from './grants.js';
import type { LocalShard } from './local-shard.js';
import type { ShardProxy } from './proxy.js';
import * as s from './schemas.js';
import type { SessionCache } from './sessions.js';

/** The JSON body limit of the CRUD calls, on Express and on the fast path. */
const BODY_LIMIT = 1024 * 1024;

/**
 * CRUD over a scoped token (spec 4.9), answered by the shard that owns the database: validated
 * and documented here, and declared `raw`, so the same calls are usually served on the fast path
 * (http/raw-dispatch.ts, through the gate in fast-path.ts), with the same admission and answers.
 */
export function crudRoutes(deps: {
  grants: TokenGrants;
  sessions: SessionCache;
  shard: LocalShard;
  proxy: ShardProxy;
  registry: RouteRegistry;
}): Router {
  const { sessions, shard, registry } = deps;
  const router = Router();
  const tags = ['SQLite'];
  const scoped = scopedToken(deps);
  const { toOwner } = deps.proxy;
  const body = jsonBody(`${BODY_LIMIT}b`);
  const gate = scopedGate(deps);
  const common: ErrorCode[] = [
    'SQLITE_TOKEN_INVALID',
    'SQLITE_FORBIDDEN',
    'SQLITE_USER_TOKEN_MISSING',
    'SQLITE_SESSION_INVALID',
    // The shard is moving the database, its worker restarted, or the worker's queue is full.
    'CAPACITY',
  ];
  /** Calls that queue SQL for the database: past its queue bound they get 429 with Retry-After. */
  const queued: ErrorCode[] = [...common, 'RATE_LIMITED'];
  const fairness =
    ' Each database queues at most 128 calls (more: 429 with Retry-After) and a worker 1,024 (more: 503 with Retry-After); the databases of a worker take turns, one call each.';

  /** One call, the same on the fast path (`raw`) and on Express (`handler`). */
  const call = (op: CrudOp, bodyLimit?: number, quickBody?: (body: unknown) => unknown) => {
    const serve = (grant: Grant, body: unknown, req: IncomingMessage) =>
      runCrud({ sessions, shard }, op, grant, req.headers, body);
    const raw: RawServing<Grant, unknown> = { gate, bodyLimit, quickBody, handler: serve };
    const handler = async ({ req, res, body }: { req: Request; res: Response; body: unknown }) => {
      const answer = await serve(grantOf(req), body, req);
      // What res.json does with the text it makes (Content-Type with its charset, then send).
      if (answer instanceof JsonText) res.set('Content-Type', 'application/json').send(answer.text);
      else res.json(answer);
    };
    return { raw, handler };
  };

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/query',
    summary: 'Run one read-only statement',
    description:
      'One statement that only reads (SELECT, a read-only PRAGMA of the allowlist, WITH … SELECT). Writes, two statements, ATTACH, transaction control and the internal tables are refused with 400 `SQL error`. ' +
      'A statement runs at most 2 s. At most 10,000 rows or 8 MiB of JSON come back; the row that would go past that ends the answer and `truncated` is true. ' +
      'One value (string or blob, made or read) is at most 2,000,000 bytes, and the columns of a query share the 8 MiB: each value at most 8 MiB ÷ columns; a first row over that is a 400 `SQL error` (code SQLITE_TOOBIG) that names the cap. ' +
      'Integers beyond 2^53 come as `{"$bigint": "…"}`, blobs as `{"$base64": "…"}`.' +
      fairness,
    tags,
    auth: 'sqliteTokenMaybeUser',
    errors: [...queued, 'SQL_ERROR'],
    middleware: [scoped, toOwner, body],
    body: s.statementBody,
    responses: { 200: { description: 'The rows', schema: s.queryResponse } },
    ...call('query', BODY_LIMIT, s.quickStatementBody),
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/exec',
    summary: 'Run one write statement',
    description:
      'One statement that writes (INSERT, UPDATE, DELETE, CREATE/DROP/ALTER …), in its own transaction; `version` increases. Read tokens get 403. ' +
      '`lastInsertRowId` is the rowid of the last row this statement inserted, 0 when it inserted none (never the rowid of an earlier statement). ' +
      'When the database is over its plan’s size cap, writes get 413 until DELETE or DROP frees space (then vacuum). ' +
      'An AUTOINCREMENT counter at its maximum is a 400 SQL error (SQLITE_FULL), not the size cap. ' +
      'A value (and a stored row) is at most 2,000,000 bytes: more is a 400 `SQL error` (code SQLITE_TOOBIG).' +
      fairness,
    tags,
    auth: 'sqliteTokenMaybeUser',
    errors: [...queued, 'SQL_ERROR', 'SQLITE_SIZE_LIMIT'],
    middleware: [scoped, toOwner, body],
    body: s.statementBody,
    responses: { 200: { description: 'Applied', schema: s.execResponse } },
    ...call('exec', BODY_LIMIT, s.quickStatementBody),
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/batch',
    summary: 'Run write statements in one all-or-nothing transaction',
    description:
      'The statements run in order in one IMMEDIATE transaction (at most 500). On any failure everything is rolled back and the 400 names the failing statement in `statementIndex` (0-based). ' +
      'Each result’s `lastInsertRowId` is the rowid of the last row that statement inserted, or null when it inserted none.' +
      fairness,
    tags,
    auth: 'sqliteTokenMaybeUser',
    errors: [...queued, 'SQL_ERROR', 'SQLITE_SIZE_LIMIT'],
    middleware: [scoped, toOwner, body],
    body: s.batchBody,
    responses: { 200: { description: 'Applied', schema: s.batchResponse } },
    ...call('batch', BODY_LIMIT),
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/version',
    summary: 'The database’s change counter and size (poll it to refresh)',
    description: 'Takes no write lock and usually no SQL round trip. `version` increases with every write.',
    tags,
    auth: 'sqliteTokenMaybeUser',
    errors: common,
    middleware: [scoped, toOwner],
    responses: { 200: { description: 'Version and size', schema: s.versionResponse } },
    ...call('version'),
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/schema',
    summary: 'The database’s tables with their CREATE TABLE text',
    description:
      'System tables and the internal tables are omitted. Each table also lists its columns and indexes (extension).',
    tags,
    auth: 'sqliteTokenMaybeUser',
    errors: queued,
    middleware: [scoped, toOwner],
    responses: { 200: { description: 'The schema', schema: s.schemaResponse } },
    ...call('schema'),
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/vacuum',
    summary: 'Rebuild the database file to give back free space',
    description:
      'Holds the write lock while it runs. Read tokens get 403; when the token requires user auth, only an admin may vacuum (403 `VACUUM requires an admin user.`).',
    tags,
    auth: 'sqliteTokenMaybeUser',
    errors: [...queued, 'SQL_ERROR'],
    middleware: [scoped, toOwner],
    responses: { 200: { description: 'Vacuumed', schema: s.vacuumResponse } },
    ...call('vacuum'),
  });
  return router;
}
