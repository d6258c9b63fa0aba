import { z } from 'zod';
import { databasePath } from '../files/index.js';
import { queryParamDocs } from '../http/index.js';
import { isParamShape } from './engine/index.js';

// Request and response schemas of the SQLite API (spec 4.8-4.10, 2.10-2.12).

/**
 * A string of at most `max` characters, counted as the document counts them (code points, so an
 * emoji is one), not as JavaScript's UTF-16 `length` does.
 */
export const chars = (max: number) =>
  z
    .string()
    .refine((v) => v.length <= max || [...v].length <= max, `must be at most ${max} characters`)
    .meta({ maxLength: max });

const noNul = z
  .string()
  .refine((v) => !v.includes('\u0000'), 'must not contain NUL characters')
  .meta({ pattern: '^[^\\u0000]*$' });

export const installBody = z.object({
  path: databasePath('Database path in the site, ending in .sqlite or .db'),
  name: chars(120)
    .refine((v) => v.trim() !== '' && !v.includes('\u0000'), 'must not be empty or contain NUL characters')
    .meta({ pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$' })
    .describe('A name for the token (≤ 120)'),
  permissions: z.enum(['read', 'readwrite']).default('readwrite'),
  requireUserAuth: z.boolean().default(true).describe('Whether CRUD calls also need a user session'),
  expiresInDays: z.number().int().min(1).max(3650).optional().describe('Omitted: the token never expires'),
  allowedOrigins: z.unknown().optional().describe('Ignored: the origins are derived from the site'),
});

export const tokenIdParam = z.object({
  id: z
    .string()
    .regex(/^\d{1,10}$/, 'must be a token id (a whole number)')
    .transform(Number)
    .pipe(z.number().int().min(1).max(2_147_483_647)),
});
export const userIdParam = z.object({
  id: z
    .string()
    .regex(/^\d{1,10}$/, 'must be a user id (a whole number)')
    .transform(Number)
    .pipe(z.number().int().min(1).max(2_147_483_647)),
});

const iso = z.iso.datetime();
export const tokenRecord = z.object({
  id: z.int(),
  path: z.string(),
  name: z.string(),
  permissions: z.enum(['read', 'readwrite']),
  requiresUserAuth: z.boolean(),
  allowedOrigins: z.array(z.string()),
  createdAt: iso,
  lastUsedAt: iso.nullable(),
  expiresAt: iso.nullable(),
  revokedAt: iso.nullable(),
});

export const installResponse = z.object({
  success: z.boolean(),
  token: z.string().describe('The scoped token (shown once): send it as X-Sqlite-Token'),
  tokenId: z.int(),
  path: z.string(),
  permissions: z.enum(['read', 'readwrite']),
  requiresUserAuth: z.boolean(),
  allowedOrigins: z.array(z.string()),
  expiresAt: iso.nullable(),
});
export const tokensResponse = z.object({ success: z.boolean(), tokens: z.array(tokenRecord) });
export const revokeResponse = z.object({ success: z.boolean(), tokenId: z.int(), revokedAt: iso });

// Documented as the server checks them (users.ts, passwords.ts), but checked there, so the answers
// keep their own codes (INVALID_EMAIL, PASSWORD_TOO_SHORT) rather than INVALID_REQUEST.
// JavaScript's whitespace (what trim() removes and `\s` matches), spelled out: other regex engines
// (the fuzzer's, clients') give `\s` other members.
const WS = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
const email = z
  .string()
  .max(1000)
  .meta({
    maxLength: 254,
    pattern: `^[${WS}]*[^${WS}@\\u0000]+@[^${WS}@\\u0000]+\\.[^${WS}@\\u0000]+[${WS}]*$`,
  })
  .describe('Trimmed and lower-cased; at most 254 characters');
const password = z
  .string()
  .meta({ minLength: 8, maxLength: 256 })
  .describe('At least 8 characters, not a common password');
const displayName = noNul.pipe(chars(120)).nullable().optional().describe('At most 120 characters');

export const registerBody = z.object({ email, password, displayName });
export const loginBody = z.object({ email, password: z.string().max(1000) });
export const changePasswordBody = z.object({ currentPassword: z.string().max(1000), newPassword: password });
export const resetPasswordBody = z.object({ newPassword: password });
export const updateUserBody = z
  .strictObject({
    role: z.enum(['admin', 'user']).optional(),
    disabled: z.boolean().optional(),
    displayName,
  })
  .refine(
    (b) => Object.values(b).some((v) => v !== undefined),
    'send at least one of role, disabled, displayName',
  )
  .meta({ minProperties: 1 });

const userBase = {
  id: z.int(),
  email: z.string(),
  displayName: z.string().nullable(),
  role: z.enum(['admin', 'user']),
  disabled: z.boolean(),
};
export const userShort = z.object(userBase);
export const user = z.object({ ...userBase, createdAt: iso, lastLoginAt: iso.nullable() });
export const registerResponse = z.object({ success: z.boolean(), user: userShort });
export const loginResponse = z.object({ success: z.boolean(), userToken: z.string(), expiresAt: iso, user });
export const userResponse = z.object({ success: z.boolean(), user });
export const usersResponse = z.object({ success: z.boolean(), users: z.array(user) });

// CRUD (spec 4.9)

const sqlText = chars(100_000)
  .refine((v) => v.length > 0, 'must not be empty')
  .meta({ minLength: 1 })
  .describe('One SQL statement with positional `?` placeholders');
/** A signed 64-bit integer in decimal (what `{"$bigint"}` accepts), as a pattern. */
const INT64 =
  '^(-?(?:\\d{1,18}|[0-8]\\d{18}|9[0-1]\\d{17}|92[0-1]\\d{16}|922[0-2]\\d{15}|9223[0-2]\\d{14}|92233[0-6]\\d{13}|922337[0-1]\\d{12}|92233720[0-2]\\d{10}|922337203[0-5]\\d{9}|9223372036[0-7]\\d{8}|92233720368[0-4]\\d{7}|922337203685[0-3]\\d{6}|9223372036854[0-6]\\d{5}|92233720368547[0-6]\\d{4}|922337203685477[0-4]\\d{3}|9223372036854775[0-7]\\d{2}|922337203685477580[0-7])|-9223372036854775808)$';
const tagged = (key: string, value: Record<string, unknown>) => ({
  type: 'object',
  properties: { [key]: value },
  required: [key],
  additionalProperties: false,
});
/**
 * One parameter value. Its shape (a scalar or a one-key tagged object of a string) is checked here,
 * so nothing nested reaches a worker; the engine (engine/encoding.ts) checks the rest and answers a
 * bad one with 400 `SQL error` naming it. Documented here as exactly what it takes.
 */
const paramValue = z
  .unknown()
  .refine(
    isParamShape,
    'must be a value: a string, number, boolean, null, or {"$bigint" | "$base64" | "$real": "…"}',
  );
paramValue.register(queryParamDocs, {
  description: 'A value: string, number, boolean (1/0), null, or a tagged big integer, blob or infinity',
  anyOf: [
    { type: 'null' },
    { type: 'string' },
    { type: 'number' },
    { type: 'boolean' },
    tagged('$bigint', { type: 'string', pattern: INT64 }),
    tagged('$base64', {
      type: 'string',
      pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$',
    }),
    tagged('$real', { enum: ['Infinity', '-Infinity'] }),
  ],
});
const params = z
  .array(paramValue)
  .max(999)
  .optional()
  .describe(
    'Values for the `?` placeholders: strings, numbers, booleans, null; `{"$bigint": "…"}` and `{"$base64": "…"}` for big integers and blobs',
  );

export const statementBody = z.object({ sql: sqlText, params });

/**
 * statementBody's parse of its usual shape without zod (the fast path's point reads and inserts):
 * `sql` a non-empty string of at most 100,000 UTF-16 units (so at most as many characters),
 * `params` absent or at most 999 values of the accepted shapes; the other keys dropped, as the
 * schema does. Anything else: undefined, and the schema decides and words its refusal.
 */
export function quickStatementBody(body: unknown): z.infer<typeof statementBody> | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { sql, params } = body as Record<string, unknown>;
  if (typeof sql !== 'string' || sql.length === 0 || sql.length > 100_000) return undefined;
  if (params === undefined) return { sql };
  if (!Array.isArray(params) || params.length > 999) return undefined;
  for (const value of params) if (!isParamShape(value)) return undefined;
  return { sql, params };
}
export const batchBody = z.object({
  statements: z
    .array(z.object({ sql: sqlText, params }))
    .min(1)
    .max(500)
    .describe('Run in order in one transaction'),
});

const cell = z.unknown().describe('A value: string, number, null, `{"$bigint": "…"}` or `{"$base64": "…"}`');
export const queryResponse = z.object({
  success: z.boolean(),
  rows: z.array(z.record(z.string(), cell)),
  rowCount: z.int(),
  version: z.int(),
  truncated: z.boolean().describe('True when the rows were cut at the response caps (extension)'),
});
export const execResponse = z.object({
  success: z.boolean(),
  rowsAffected: z.int(),
  lastInsertRowId: z
    .int()
    .describe(
      'The rowid of the last row this statement inserted; 0 when it inserted none (UPDATE, DELETE, DDL, INSERT OR IGNORE that ignored every row). A row inserted with rowid 0 explicitly also reads 0',
    ),
  version: z.int(),
});
export const batchResponse = z.object({
  success: z.boolean(),
  results: z.array(
    z.object({
      rowsAffected: z.int(),
      lastInsertRowId: z
        .int()
        .nullable()
        .describe('The rowid of the last row this statement inserted; null when it inserted none'),
    }),
  ),
  version: z.int(),
});
export const versionResponse = z.object({ success: z.boolean(), version: z.int(), sizeBytes: z.int() });
const schemaObject = z.object({ name: z.string(), tableName: z.string(), sql: z.string() });
export const schemaResponse = z.object({
  success: z.boolean(),
  tables: z.array(
    z.object({
      name: z.string(),
      sql: z.string().describe('The CREATE TABLE text'),
      columns: z.array(
        z.object({
          name: z.string(),
          type: z.string(),
          notNull: z.boolean(),
          defaultValue: z.string().nullable(),
          primaryKey: z.boolean(),
        }),
      ),
      indexes: z.array(z.object({ name: z.string(), sql: z.string() })),
    }),
  ),
  views: z.array(schemaObject).describe('Views, with their CREATE VIEW text (extension)'),
  triggers: z.array(schemaObject).describe('Triggers, with their table and CREATE TRIGGER text (extension)'),
});
export const vacuumResponse = z.object({
  success: z.boolean(),
  sizeBefore: z.int(),
  sizeAfter: z.int(),
  durationMs: z.number(),
  version: z.int(),
});

// The site's databases (extension, for the owner's console)
export const databaseRecord = z.object({
  path: z.string(),
  sizeBytes: z
    .int()
    .describe('The file’s size: live when this replica owns it, else as its shard last reported it'),
  maxSizeBytes: z
    .int()
    .nullable()
    .describe('The size cap in effect (plan, or the database’s own if lower); null: none'),
  version: z.int().describe('The change counter, as fresh as sizeBytes'),
  users: z.int().describe('End users in its pool'),
  maxUsers: z.int().nullable().describe('The user cap in effect; null: none'),
  activeTokens: z.int().describe('Scoped tokens neither revoked nor expired'),
  createdAt: iso,
});
export const databasesResponse = z.object({
  success: z.boolean(),
  databases: z.array(databaseRecord),
  maxDatabases: z.int().nullable().describe('The plan’s database count (per account); null: unlimited'),
});
