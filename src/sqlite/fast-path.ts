import type { FastPath } from '../http/index.js';
import { matchedOrigin, parseOrThrow, plainJsonBody, rawRoute, readJsonBody } from '../http/index.js';
import type { Logger } from '../observability/index.js';
import { CRUD_CALLS, runCrud, type CrudOp } from './crud-ops.js';
import type { TokenGrants } from './grants.js';
import type { LocalShard } from './local-shard.js';
import { SHARD_SECRET_HEADER, sameSecret } from './proxy.js';
import type { Shards } from './shards.js';
import type { SessionCache } from './sessions.js';

/** The JSON body limit of the CRUD calls (`jsonBody('1mb')` of their routes). */
const BODY_LIMIT = 1024 * 1024;

/**
 * The CRUD calls served without Express when this process owns the database: the same checks
 * and answers as their routes (token, Origin, CORS, user session, body rules, registry errors,
 * metrics, span, log line), at a fraction of the cost per call (bench/sqlite). Everything else —
 * a bad or unknown token, a refused Origin, a database another shard owns or not placed yet, a
 * compressed or non-UTF-8 body, any other method — is handed to Express untouched, which answers
 * it as before.
 */
export function sqliteFastPath(deps: {
  grants: TokenGrants;
  shards: Shards;
  shard: LocalShard;
  sessions: SessionCache;
  secret: () => Promise<Buffer>;
}): (ctx: { role: string; logger: Logger }) => FastPath {
  return ({ role, logger }) => {
    const calls = new Map<string, { op: CrudOp; serve: ReturnType<typeof rawRoute> }>();
    for (const [op, call] of Object.entries(CRUD_CALLS) as Array<[CrudOp, (typeof CRUD_CALLS)[CrudOp]]>)
      calls.set(`${call.method} ${call.path}`, { op, serve: rawRoute({ role, logger, route: call.path }) });

    return (req, res, toExpress) => {
      const url = req.url ?? '';
      const query = url.indexOf('?');
      const call = calls.get(`${req.method} ${query < 0 ? url : url.slice(0, query)}`);
      if (!call) return false;
      const token = req.headers['x-sqlite-token'];
      if (typeof token !== 'string' || token === '') return false;
      const { body } = CRUD_CALLS[call.op];
      if (body && !plainJsonBody(req)) return false;
      const started = performance.now();
      const forwarded = req.headers[SHARD_SECRET_HEADER];
      Promise.all([deps.grants.resolve(token), forwarded === undefined ? undefined : deps.secret()])
        .then(
          ([grant, secret]) => {
            const origin = matchedOrigin(req.headers.origin, grant.origins);
            if (
              origin === undefined ||
              (secret && !(typeof forwarded === 'string' && sameSecret(forwarded, secret))) ||
              grant.database.shard !== deps.shards.self.name
            )
              return toExpress();
            res.setHeader('Vary', 'Origin');
            res.setHeader('Access-Control-Allow-Origin', origin);
            call.serve(
              req,
              res,
              async () => {
                const input = body
                  ? parseOrThrow(body, await readJsonBody(req, BODY_LIMIT), 'body')
                  : undefined;
                const userToken = req.headers['x-sqlite-user-token'];
                const answer = await runCrud(
                  deps,
                  call.op,
                  grant,
                  typeof userToken === 'string' ? userToken : undefined,
                  input,
                );
                return { status: 200, body: answer };
              },
              started,
            );
          },
          toExpress, // an invalid token or a failed lookup: Express answers it, as it would have
        )
        // Not expected (both branches handle their own failures), but never an unhandled rejection.
        .catch((err: unknown) => {
          logger.error({ err }, 'sqlite fast path failed');
          res.destroy();
        });
      return true;
    };
  };
}
