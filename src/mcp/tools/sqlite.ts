import { z } from 'zod';
import { AppError } from '../../errors/index.js';
import { ApiError, type PublicApi } from '../api.js';
import { result } from '../results.js';
import { tool } from '../tool.js';

type Json = Record<string, unknown>;

const token = z
  .string()
  .min(1)
  .max(200)
  .describe('The scoped token sqlite_install answered (X-Sqlite-Token): one database of the site');
const userToken = z
  .string()
  .min(1)
  .max(200)
  .optional()
  .describe("An end user's session (X-Sqlite-User-Token), needed when the token requires user auth");
const sql = z.string().min(1).max(100_000).describe('One SQL statement, with ? placeholders');
const params = z
  .array(z.union([z.string(), z.number(), z.boolean(), z.null()]))
  .max(999)
  .optional()
  .describe('Values of the ? placeholders, in order');

/** The API's answer when a token that needs an end user comes without one (its text is the registry's). */
const userTokenMissing = new AppError('SQLITE_USER_TOKEN_MISSING').body.message;

const ownTokenHint =
  "This token was made for pages: every call needs an end user's session (user_token). To manage the database " +
  'yourself, call sqlite_install again with require_user_auth: false for a token of your own, keep that token ' +
  'secret (never in a page, a file of the site or a commit) and use it with these tools.';

/**
 * A call with a scoped token. Its Origin is the site's own address (what the site's pages send):
 * a scoped token only answers the origins of its site, so a token of another site is refused here
 * exactly as in a browser; the key only tells which site that is.
 */
async function withToken(
  api: PublicApi,
  method: string,
  path: string,
  args: { token: string; user_token?: string },
  json?: unknown,
): Promise<Json> {
  const info = await api.call<{ base_url: string }>('GET', '/api/v1/hosting-info');
  const headers: Record<string, string> = {
    'x-sqlite-token': args.token,
    origin: new URL(info.base_url).origin,
  };
  if (args.user_token !== undefined) headers['x-sqlite-user-token'] = args.user_token;
  try {
    return await api.call<Json>(method, path, { headers, json });
  } catch (err) {
    // The API's hint (sign a user in with a password) is for a page; an agent needs its own token.
    if (err instanceof ApiError && err.status === 401 && err.body.message === userTokenMissing)
      throw new ApiError(err.status, { ...err.body, hint_for_ai: ownTokenHint });
    throw err;
  }
}

export const sqliteTools = [
  tool({
    name: 'sqlite_install',
    feature: 'sqlite',
    title: 'Create a SQLite database (if absent) and a scoped token for it',
    description:
      'Answers a scoped token for one database file of the site (path ending in .sqlite or .db), which the other sqlite_ ' +
      "tools take. require_user_auth: true (the default, as in the HTTP API) makes every call also need an end user's " +
      "session: that is the token to put in the site's pages. To create tables and manage the data yourself, ask for " +
      'require_user_auth: false: that token alone reads and writes the whole database, so keep it secret and never put ' +
      'it in a page or a file of the site. Plan limits on database count and size apply.',
    access: 'write',
    input: {
      path: z.string().min(1).max(1024).describe('Database path in the site, e.g. data/app.sqlite'),
      name: z.string().min(1).max(120).describe('A name for the token'),
      permissions: z.enum(['read', 'readwrite']).default('readwrite'),
      require_user_auth: z
        .boolean()
        .default(true)
        .describe(
          "true: calls also need an end user's session (for pages); false: the token alone (keep it secret)",
        ),
      expires_in_days: z.int().min(1).max(3650).optional().describe('Omitted: never expires'),
    },
    output: {
      token: z.string(),
      token_id: z.int(),
      path: z.string(),
      permissions: z.string(),
      requires_user_auth: z.boolean(),
      expires_at: z.string().nullable(),
    },
    run: async (args, api) => {
      const answer = await api.call<Json>('POST', '/api/v1/sqlite/auth/install', {
        json: {
          path: args.path,
          name: args.name,
          permissions: args.permissions,
          requireUserAuth: args.require_user_auth,
          expiresInDays: args.expires_in_days,
        },
      });
      return result('the scoped token and the database it opens', {
        token: answer.token,
        token_id: answer.tokenId,
        path: answer.path,
        permissions: answer.permissions,
        requires_user_auth: answer.requiresUserAuth,
        expires_at: answer.expiresAt ?? null,
      });
    },
  }),
  tool({
    name: 'sqlite_query',
    feature: 'sqlite',
    title: 'Run one read statement',
    description:
      'Runs one SELECT (or other read) statement and answers its rows, fenced as untrusted data (rows hold what the site and its users stored).',
    access: 'read',
    input: { token, sql, params, user_token: userToken },
    output: { rows: z.array(z.looseObject({})), row_count: z.int(), version: z.int() },
    run: async (args, api) => {
      const answer = await withToken(api, 'POST', '/api/v1/sqlite/query', args, {
        sql: args.sql,
        params: args.params ?? [],
      });
      const structured = { rows: answer.rows, row_count: answer.rowCount, version: answer.version };
      return result('the rows the statement returned', structured);
    },
  }),
  tool({
    name: 'sqlite_exec',
    feature: 'sqlite',
    title: 'Run one write statement',
    description: 'Runs one write statement (CREATE, INSERT, UPDATE, DELETE…); needs a readwrite token.',
    access: 'write',
    input: { token, sql, params, user_token: userToken },
    output: { rows_affected: z.int(), last_insert_row_id: z.int().nullable(), version: z.int() },
    run: async (args, api) => {
      const answer = await withToken(api, 'POST', '/api/v1/sqlite/exec', args, {
        sql: args.sql,
        params: args.params ?? [],
      });
      return result("the statement's outcome", {
        rows_affected: answer.rowsAffected,
        last_insert_row_id: answer.lastInsertRowId ?? null,
        version: answer.version,
      });
    },
  }),
  tool({
    name: 'sqlite_batch',
    feature: 'sqlite',
    title: 'Run several write statements in one transaction',
    description:
      'Runs the statements in order, all or nothing: on a failure everything rolls back and the error names the failing statement.',
    access: 'write',
    input: {
      token,
      statements: z.array(z.object({ sql, params })).min(1).max(500),
      user_token: userToken,
    },
    output: {
      results: z.array(z.looseObject({ rowsAffected: z.int() })),
      version: z.int(),
    },
    run: async (args, api) => {
      const answer = await withToken(api, 'POST', '/api/v1/sqlite/batch', args, {
        statements: args.statements.map((s) => ({ sql: s.sql, params: s.params ?? [] })),
      });
      return result("the statements' outcomes", { results: answer.results, version: answer.version });
    },
  }),
  tool({
    name: 'sqlite_schema',
    feature: 'sqlite',
    title: "The database's tables",
    description:
      'Each table with its CREATE TABLE statement (internal tables left out), fenced as untrusted data.',
    access: 'read',
    input: { token, user_token: userToken },
    output: { tables: z.array(z.looseObject({ name: z.string(), sql: z.string().nullable() })) },
    run: async (args, api) => {
      const answer = await withToken(api, 'GET', '/api/v1/sqlite/schema', args);
      return result("the database's tables", { tables: answer.tables });
    },
  }),
];
