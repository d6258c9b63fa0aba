import { Router, type Request } from 'express';
import client from 'prom-client';
import { AppError, type ErrorCode } from '../errors/index.js';
import { jsonBody, type RouteRegistry } from '../http/index.js';
import { registry, withSpan } from '../observability/index.js';
import { grantOf, scopedToken, signedIn } from './access.js';
import { isSqliteEngineError, type SqliteDatabase } from './engine/index.js';
import type { TokenGrants } from './grants.js';
import type { LocalShard } from './local-shard.js';
import * as s from './schemas.js';
import type { UserPools } from './users.js';

const statementsTotal = new client.Counter({
  name: 'hostplane_sqlite_statements_total',
  help: 'SQLite calls by operation and outcome (ok, sql, denied, statement, timeout, size, error)',
  labelNames: ['op', 'outcome'] as const,
  registers: [registry],
});
const statementDuration = new client.Histogram({
  name: 'hostplane_sqlite_statement_duration_seconds',
  help: 'SQLite calls on the owning shard, queue wait in the worker included',
  labelNames: ['op'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});
const guardRefusals = new client.Counter({
  name: 'hostplane_sqlite_guard_refusals_total',
  help: 'Statements the guard refused, by the class of what it refused (pragma, function, table, attach, …)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

type Op = 'query' | 'exec' | 'batch' | 'version' | 'schema' | 'vacuum';

/** Runs one engine call with its metrics and span; engine failures become registry codes. */
async function measured<T>(op: Op, fn: () => Promise<T>): Promise<T> {
  const stop = statementDuration.startTimer({ op });
  try {
    const result = await withSpan(`sqlite.${op}`, { 'sqlite.op': op }, fn);
    statementsTotal.inc({ op, outcome: 'ok' });
    return result;
  } catch (err) {
    const kind = isSqliteEngineError(err) ? err.kind : 'error';
    statementsTotal.inc({ op, outcome: kind === 'closed' || kind === 'internal' ? 'error' : kind });
    if (isSqliteEngineError(err) && err.kind === 'denied')
      guardRefusals.inc({ reason: err.reasonClass ?? 'other' });
    throw engineError(err);
  } finally {
    stop();
  }
}

/** An engine failure as a registry code: the statement's fault is a 400, a full database a 413. */
export function engineError(err: unknown): unknown {
  if (!isSqliteEngineError(err)) return err;
  if (err.kind === 'size')
    return new AppError('SQLITE_SIZE_LIMIT', {
      sizeBytes: err.sizeBytes ?? 0,
      limitBytes: err.limitBytes ?? 0,
      applied: err.applied ?? false,
    });
  if (err.kind === 'sql' || err.kind === 'denied' || err.kind === 'statement' || err.kind === 'timeout')
    return new AppError('SQL_ERROR', {
      message: err.message,
      sqliteCode: err.sqliteCode,
      statementIndex: err.index,
    });
  return err;
}

/** CRUD over a scoped token (spec 4.9), served by this process's shard. */
export function crudRoutes(deps: {
  grants: TokenGrants;
  users: UserPools;
  shard: LocalShard;
  registry: RouteRegistry;
}): Router {
  const { users, shard, registry } = deps;
  const router = Router();
  const tags = ['SQLite'];
  const scoped = scopedToken(deps);
  const body = jsonBody('1mb');
  const common: ErrorCode[] = [
    'SQLITE_TOKEN_INVALID',
    'SQLITE_FORBIDDEN',
    'SQLITE_USER_TOKEN_MISSING',
    'SQLITE_SESSION_INVALID',
  ];

  /** The database of the call, after the user check its token asks for; writes need readwrite. */
  const open = async (req: Request, access: 'read' | 'write' | 'vacuum'): Promise<SqliteDatabase> => {
    const grant = grantOf(req);
    if (access !== 'read' && grant.token.permissions === 'read')
      throw new AppError('SQLITE_FORBIDDEN', { message: 'This token is read-only.' });
    if (grant.token.requiresUserAuth) {
      const me = await signedIn(req, users);
      if (access === 'vacuum' && me.user.role !== 'admin')
        throw new AppError('SQLITE_FORBIDDEN', { message: 'VACUUM requires an admin user.' });
    }
    return shard.handle(grant.database, grant.plan.maxSqliteBytes);
  };

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/query',
    summary: 'Run one read-only statement',
    description:
      'One statement that only reads (SELECT, a read-only PRAGMA of the allowlist, WITH … SELECT). Writes, two statements, ATTACH, transaction control and the internal tables are refused with 400 `SQL error`. ' +
      'A statement runs at most 2 s. At most 10,000 rows or 8 MB of JSON come back; beyond that the rows are cut and `truncated` is true. ' +
      'Integers beyond 2^53 come as `{"$bigint": "…"}`, blobs as `{"$base64": "…"}`.',
    tags,
    auth: 'none',
    errors: [...common, 'SQL_ERROR'],
    middleware: [scoped, body],
    body: s.statementBody,
    responses: { 200: { description: 'The rows', schema: s.queryResponse } },
    handler: async ({ req, res, body }) => {
      const db = await open(req, 'read');
      const result = await measured('query', () => db.query(body.sql, body.params));
      res.json({
        success: true,
        rows: result.rows,
        rowCount: result.rowCount,
        version: result.version,
        truncated: result.truncated,
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/exec',
    summary: 'Run one write statement',
    description:
      'One statement that writes (INSERT, UPDATE, DELETE, CREATE/DROP/ALTER …), in its own transaction; `version` increases. Read tokens get 403. ' +
      'When the database is over its plan’s size cap, writes get 413 until DELETE or DROP frees space (then vacuum).',
    tags,
    auth: 'none',
    errors: [...common, 'SQL_ERROR', 'SQLITE_SIZE_LIMIT'],
    middleware: [scoped, body],
    body: s.statementBody,
    responses: { 200: { description: 'Applied', schema: s.execResponse } },
    handler: async ({ req, res, body }) => {
      const db = await open(req, 'write');
      const result = await measured('exec', () => db.exec(body.sql, body.params));
      res.json({
        success: true,
        rowsAffected: result.rowsAffected,
        lastInsertRowId: result.lastInsertRowId,
        version: result.version,
      });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/batch',
    summary: 'Run write statements in one all-or-nothing transaction',
    description:
      'The statements run in order in one IMMEDIATE transaction (at most 500). On any failure everything is rolled back and the 400 names the failing statement in `statementIndex` (0-based).',
    tags,
    auth: 'none',
    errors: [...common, 'SQL_ERROR', 'SQLITE_SIZE_LIMIT'],
    middleware: [scoped, body],
    body: s.batchBody,
    responses: { 200: { description: 'Applied', schema: s.batchResponse } },
    handler: async ({ req, res, body }) => {
      const db = await open(req, 'write');
      const result = await measured('batch', () => db.batch(body.statements));
      res.json({ success: true, results: result.results, version: result.version });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/version',
    summary: 'The database’s change counter and size (poll it to refresh)',
    description: 'Takes no write lock and usually no SQL round trip. `version` increases with every write.',
    tags,
    auth: 'none',
    errors: common,
    middleware: [scoped],
    responses: { 200: { description: 'Version and size', schema: s.versionResponse } },
    handler: async ({ req, res }) => {
      const db = await open(req, 'read');
      const result = await measured('version', () => db.version());
      res.json({ success: true, version: result.version, sizeBytes: result.sizeBytes });
    },
  });

  registry.add(router, {
    method: 'get',
    path: '/api/v1/sqlite/schema',
    summary: 'The database’s tables with their CREATE TABLE text',
    description:
      'System tables and the internal tables are omitted. Each table also lists its columns and indexes (extension).',
    tags,
    auth: 'none',
    errors: common,
    middleware: [scoped],
    responses: { 200: { description: 'The schema', schema: s.schemaResponse } },
    handler: async ({ req, res }) => {
      const db = await open(req, 'read');
      const result = await measured('schema', () => db.schema());
      res.json({ success: true, tables: result.tables, views: result.views, triggers: result.triggers });
    },
  });

  registry.add(router, {
    method: 'post',
    path: '/api/v1/sqlite/vacuum',
    summary: 'Rebuild the database file to give back free space',
    description:
      'Holds the write lock while it runs. Read tokens get 403; when the token requires user auth, only an admin may vacuum (403 `VACUUM requires an admin user.`).',
    tags,
    auth: 'none',
    errors: [...common, 'SQL_ERROR'],
    middleware: [scoped],
    responses: { 200: { description: 'Vacuumed', schema: s.vacuumResponse } },
    handler: async ({ req, res }) => {
      const db = await open(req, 'vacuum');
      const result = await measured('vacuum', () => db.vacuum());
      res.json({ success: true, ...result });
    },
  });
  return router;
}
