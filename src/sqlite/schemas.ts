import { z } from 'zod';
import { databasePath } from '../files/index.js';

// Request and response schemas of the SQLite API (spec 4.8-4.10, 2.10-2.12).

const noNul = z
  .string()
  .refine((v) => !v.includes('\u0000'), 'must not contain NUL characters')
  .meta({ pattern: '^[^\\u0000]*$' });

export const installBody = z.object({
  path: databasePath('Database path in the site, ending in .sqlite or .db'),
  name: z
    .string()
    .max(120)
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

const email = z.string().max(1000).describe('Trimmed and lower-cased; at most 254 characters');
const password = z.string().max(1000).describe('At least 8 characters, not a common password');
const displayName = noNul.pipe(z.string().max(120)).nullable().optional().describe('At most 120 characters');

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

const sqlText = z
  .string()
  .min(1, 'must not be empty')
  .max(100_000)
  .describe('One SQL statement with positional `?` placeholders');
const params = z
  .array(z.unknown())
  .max(999)
  .optional()
  .describe(
    'Values for the `?` placeholders: strings, numbers, booleans, null; `{"$bigint": "…"}` and `{"$base64": "…"}` for big integers and blobs',
  );

export const statementBody = z.object({ sql: sqlText, params });
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
const writeOutcome = { rowsAffected: z.int(), lastInsertRowId: z.int().nullable() };
export const execResponse = z.object({ success: z.boolean(), ...writeOutcome, version: z.int() });
export const batchResponse = z.object({
  success: z.boolean(),
  results: z.array(z.object(writeOutcome)),
  version: z.int(),
});
export const versionResponse = z.object({ success: z.boolean(), version: z.int(), sizeBytes: z.int() });
export const schemaResponse = z.object({
  success: z.boolean(),
  tables: z.array(z.object({ name: z.string(), sql: z.string() }).loose()),
});
export const vacuumResponse = z.object({
  success: z.boolean(),
  sizeBefore: z.int(),
  sizeAfter: z.int(),
  durationMs: z.number(),
  version: z.int(),
});
