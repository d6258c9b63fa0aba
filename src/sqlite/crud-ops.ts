import type { IncomingHttpHeaders } from 'node:http';
import type { z } from 'zod';
import { AppError } from '../errors/index.js';
import { JsonText } from '../http/index.js';
import { tallyCounter, tallyHistogram, withSpanWhenTraced } from '../observability/index.js';
import { isSqliteEngineError, type SqliteDatabase } from './engine/index.js';
import type { Grant } from './grants.js';
import type { LocalShard } from './local-shard.js';
import { SESSIONS_CHANGED_HEADER, SHARD_SECRET_HEADER } from './proxy.js';
import * as s from './schemas.js';
import type { SessionCache } from './sessions.js';
import { guardRefusals, statementDuration, statementsTotal } from './metrics.js';

// The CRUD calls of a scoped token (spec 4.9), shared by their Express routes (crud-routes.ts:
// validation, documentation) and the raw fast path that serves them without Express (http/raw-dispatch.ts, admitted by
// the gate in fast-path.ts).

export type CrudOp = 'query' | 'exec' | 'batch' | 'version' | 'schema' | 'vacuum';

const OPS: CrudOp[] = ['query', 'exec', 'batch', 'version', 'schema', 'vacuum'];
// Bound once per operation: the common outcome costs an addition per call, not a label hash.
const okCount = Object.fromEntries(
  OPS.map((op) => [op, tallyCounter(statementsTotal, { op, outcome: 'ok' })]),
) as Record<CrudOp, { inc(): void }>;
const duration = Object.fromEntries(
  OPS.map((op) => [op, tallyHistogram(statementDuration, { op })]),
) as Record<CrudOp, { observe(seconds: number): void }>;

/**
 * Runs one engine call with its metrics and span; engine failures become registry codes. Written
 * with `then` rather than async/await: one microtask turn per call instead of several.
 */
function measured<T>(op: CrudOp, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const timed = () => duration[op].observe((performance.now() - started) / 1000);
  let running: Promise<T>;
  try {
    running = withSpanWhenTraced(`sqlite.${op}`, { 'sqlite.op': op }, fn);
  } catch (err) {
    running = Promise.reject(err as Error);
  }
  return running.then(
    (result) => {
      okCount[op].inc();
      timed();
      return result;
    },
    (err: unknown) => {
      const kind = isSqliteEngineError(err) ? err.kind : 'error';
      statementsTotal.inc({ op, outcome: kind === 'closed' || kind === 'internal' ? 'error' : kind });
      if (isSqliteEngineError(err) && err.kind === 'denied')
        guardRefusals.inc({ reason: err.reasonClass ?? 'other' });
      timed();
      throw engineError(err);
    },
  );
}

/**
 * An engine failure as a registry code: the statement's fault is a 400, a full database a 413, a
 * database's full queue a 429 and the worker's a 503 (both with Retry-After).
 */
export function engineError(err: unknown): unknown {
  if (!isSqliteEngineError(err)) return err;
  if (err.kind === 'size')
    return new AppError('SQLITE_SIZE_LIMIT', {
      sizeBytes: err.sizeBytes ?? 0,
      limitBytes: err.limitBytes ?? 0,
      applied: err.applied ?? false,
    });
  if (err.kind === 'busy')
    return new AppError('RATE_LIMITED', {
      message: err.message,
      retryAfterSeconds: err.retryAfterSeconds ?? 1,
    });
  if (err.kind === 'overloaded' || err.kind === 'closed' || err.kind === 'storage')
    return new AppError('CAPACITY', {
      message: err.kind === 'closed' ? 'The SQLite engine restarted this database; try again.' : err.message,
      retryAfterSeconds: err.retryAfterSeconds ?? 1,
    });
  if (err.kind === 'sql' || err.kind === 'denied' || err.kind === 'statement' || err.kind === 'timeout')
    return new AppError('SQL_ERROR', {
      message: err.message,
      sqliteCode: err.sqliteCode,
      statementIndex: err.index,
    });
  return err;
}

const ACCESS: Record<CrudOp, 'read' | 'write' | 'vacuum'> = {
  query: 'read',
  exec: 'write',
  batch: 'write',
  version: 'read',
  schema: 'read',
  vacuum: 'vacuum',
};

/**
 * Runs a CRUD call for a grant (token and Origin already checked, and the shard secret of a call
 * forwarded to this owner): the user check its token asks for (writes need readwrite, vacuum an
 * admin when users sign in), then the engine on this shard. Returns the answer's body.
 */
export function runCrud(
  deps: { sessions: SessionCache; shard: LocalShard },
  op: CrudOp,
  grant: Grant,
  headers: IncomingHttpHeaders,
  body: unknown,
): Promise<Record<string, unknown> | JsonText> {
  const access = ACCESS[op];
  if (access !== 'read' && grant.token.permissions === 'read')
    return Promise.reject(new AppError('SQLITE_FORBIDDEN', { message: 'This token is read-only.' }));
  // Counted while it runs: a database let go (moved, the shard stopping) waits for it.
  const run = () => deps.shard.use(grant.database, grant.plan.maxSqliteBytes, (db) => runOn(db, op, body));
  return grant.token.requiresUserAuth ? checkUser(deps, access, grant, headers).then(run) : run();
}

/** The signed-in user a token with `requiresUserAuth` asks for (and an admin for vacuum). */
async function checkUser(
  deps: { sessions: SessionCache },
  access: (typeof ACCESS)[CrudOp],
  grant: Grant,
  headers: IncomingHttpHeaders,
): Promise<void> {
  const userToken = headers['x-sqlite-user-token'];
  if (typeof userToken !== 'string' || userToken === '') throw new AppError('SQLITE_USER_TOKEN_MISSING');
  // Forwarded by a replica that changed this pool lately (a logout, a new role): its client must
  // see the change at once, before its NOTIFY reaches this replica. Only the hop, whose secret
  // was checked, can say so, and it can only make the check stricter (a read of PostgreSQL).
  const fresh = headers[SESSIONS_CHANGED_HEADER] === '1' && headers[SHARD_SECRET_HEADER] !== undefined;
  const me = await deps.sessions.authenticate(grant.database, userToken, fresh);
  if (access === 'vacuum' && me.user.role !== 'admin')
    throw new AppError('SQLITE_FORBIDDEN', { message: 'VACUUM requires an admin user.' });
}

/** The engine call of `op` and its answer's body (`then`, not await: fewer microtask turns). */
function runOn(db: SqliteDatabase, op: CrudOp, body: unknown): Promise<Record<string, unknown> | JsonText> {
  switch (op) {
    case 'query': {
      const { sql, params } = body as z.infer<typeof s.statementBody>;
      // The rows come as JSON text from the worker: neither cloned as objects to this thread nor
      // serialized again here. The text is what JSON.stringify makes of
      // {success, rows, rowCount, version, truncated} (integers and booleans write the same).
      return measured(op, () => db.queryJson(sql, params)).then(
        (r) =>
          new JsonText(
            `{"success":true,"rows":${r.rowsJson},"rowCount":${r.rowCount},"version":${r.version},"truncated":${r.truncated}}`,
          ),
      );
    }
    case 'exec': {
      const { sql, params } = body as z.infer<typeof s.statementBody>;
      return measured(op, () => db.exec(sql, params)).then((r) => ({
        success: true,
        rowsAffected: r.rowsAffected,
        lastInsertRowId: r.lastInsertRowId,
        version: r.version,
      }));
    }
    case 'batch': {
      const { statements } = body as z.infer<typeof s.batchBody>;
      return measured(op, () => db.batch(statements)).then((r) => ({
        success: true,
        results: r.results,
        version: r.version,
      }));
    }
    case 'version':
      return measured(op, () => db.version()).then((r) => ({
        success: true,
        version: r.version,
        sizeBytes: r.sizeBytes,
      }));
    case 'schema':
      return measured(op, () => db.schema()).then((r) => ({
        success: true,
        tables: r.tables,
        views: r.views,
        triggers: r.triggers,
      }));
    case 'vacuum':
      return measured(op, () => db.vacuum()).then((r) => ({ success: true, ...r }));
  }
}
