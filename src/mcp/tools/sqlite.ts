import { z } from 'zod';
import type { PublicApi } from '../api.js';
import { ok, okUntrusted } from '../results.js';
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

/**
 * The headers of a call with a scoped token. Its Origin is the site's own address (what the
 * site's pages send): a scoped token only answers the origins of its site, so a token of another
 * site is refused here exactly as in a browser; the key only tells which site that is.
 */
async function tokenHeaders(api: PublicApi, scoped: string, user: string | undefined) {
  const info = await api.call<{ base_url: string }>('GET', '/api/v1/hosting-info');
  const headers: Record<string, string> = { 'x-sqlite-token': scoped, origin: new URL(info.base_url).origin };
  if (user !== undefined) headers['x-sqlite-user-token'] = user;
  return headers;
}

export const sqliteTools = [
  tool({
    name: 'sqlite_install',
    feature: 'sqlite',
    title: 'Create a SQLite database (if absent) and a scoped token for it',
    description:
      'Answers a scoped token for one database file of the site (path ending in .sqlite or .db), which the other sqlite_ ' +
      'tools take. require_user_auth defaults to false here (the token alone suffices: keep it secret, never put it in a ' +
      "page); true makes every call also need an end user's session, as in the HTTP API's default. Plan limits on " +
      'database count and size apply.',
    access: 'write',
    input: {
      path: z.string().min(1).max(1024).describe('Database path in the site, e.g. data/app.sqlite'),
      name: z.string().min(1).max(120).describe('A name for the token'),
      permissions: z.enum(['read', 'readwrite']).default('readwrite'),
      require_user_auth: z.boolean().default(false),
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
      return ok({
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
      const answer = await api.call<Json>('POST', '/api/v1/sqlite/query', {
        headers: await tokenHeaders(api, args.token, args.user_token),
        json: { sql: args.sql, params: args.params ?? [] },
      });
      const structured = { rows: answer.rows, row_count: answer.rowCount, version: answer.version };
      return okUntrusted(structured, 'the rows the query returned', answer.rows);
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
      const answer = await api.call<Json>('POST', '/api/v1/sqlite/exec', {
        headers: await tokenHeaders(api, args.token, args.user_token),
        json: { sql: args.sql, params: args.params ?? [] },
      });
      return ok({
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
      const answer = await api.call<Json>('POST', '/api/v1/sqlite/batch', {
        headers: await tokenHeaders(api, args.token, args.user_token),
        json: { statements: args.statements.map((s) => ({ sql: s.sql, params: s.params ?? [] })) },
      });
      return ok({ results: answer.results, version: answer.version });
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
      const answer = await api.call<Json>('GET', '/api/v1/sqlite/schema', {
        headers: await tokenHeaders(api, args.token, args.user_token),
      });
      return okUntrusted({ tables: answer.tables }, "the database's schema", answer.tables);
    },
  }),
];
