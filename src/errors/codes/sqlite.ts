import { define, retryAfter, type WithMessage } from '../define.js';

/**
 * Codes of the SQLite domain: tokens and user sessions, the user pool's sign-up and login, guard
 * rails, plan limits, and the database's own errors. Some `error` texts are the spec's upper-case codes.
 */
const UNAVAILABLE_MESSAGES = {
  restore_failed:
    'This database is not available: its file is missing on its shard and its replica could not be restored. Nothing was changed; the operator has been alerted.',
  replication_failed:
    'This database is not available: its shard could not start replicating it, and writes are not accepted unreplicated. Try again shortly.',
  file_lost:
    'This database is not available: its file is missing on its shard and it has no replica to restore. It is not replaced by an empty database; the operator has been alerted.',
} as const;

export const sqliteErrors = {
  SQLITE_TOKEN_INVALID: define({
    status: 401,
    error: 'Unauthorized',
    message: () => 'Invalid, expired, or revoked SQLite token.',
    description: 'The X-Sqlite-Token is missing, unknown, expired or revoked',
  }),
  SQLITE_USER_TOKEN_MISSING: define({
    status: 401,
    error: 'Unauthorized',
    message: () =>
      'This token requires a signed-in user: send the session token in the X-Sqlite-User-Token header.',
    extra: () => ({
      hint_for_ai:
        'Sign the user in with POST /api/v1/sqlite/auth/login (email and password) and send the returned userToken as X-Sqlite-User-Token.',
    }),
    extraSchema: (z) => ({ hint_for_ai: z.string().describe('What an agent should do next') }),
    description: 'The scoped token requires user auth and no X-Sqlite-User-Token was sent',
  }),
  SQLITE_SESSION_INVALID: define({
    status: 401,
    error: 'Unauthorized',
    message: () => 'Invalid or expired session: sign in again.',
    description: 'The X-Sqlite-User-Token is unknown, expired, of another database, or its user is disabled',
  }),
  INVALID_CREDENTIALS: define({
    status: 401,
    error: 'INVALID_CREDENTIALS',
    message: () => 'The email or password is incorrect.',
    description: 'Bad login, or a wrong currentPassword on change-password',
  }),
  INVALID_EMAIL: define({
    status: 400,
    error: 'INVALID_EMAIL',
    message: () => 'Send a valid email address of at most 254 characters.',
    description: 'The email is malformed or over 254 characters',
  }),
  PASSWORD_TOO_SHORT: define({
    status: 400,
    error: 'PASSWORD_TOO_SHORT',
    message: () => 'The password must be at least 8 characters long.',
    description: 'The password is under 8 characters',
  }),
  PASSWORD_TOO_COMMON: define<{ message?: string }>({
    status: 400,
    error: 'PASSWORD_TOO_COMMON',
    message: (p) => p.message ?? 'This password is too common: choose one that is harder to guess.',
    description:
      'The password is on the list of trivial passwords, or is repetitive, sequential or built on the email, the site or the service’s name (the message says which)',
  }),
  USER_POOL_LIMIT_REACHED: define<{ limit: number; plan: string }>({
    status: 402,
    error: 'USER_POOL_LIMIT_REACHED',
    message: (p) => `This database already has the ${p.limit} users the ${p.plan} plan allows.`,
    extra: (p) => ({ user_limit: p.limit, current_plan: p.plan }),
    extraSchema: (z) => ({ user_limit: z.int(), current_plan: z.string() }),
    description: 'Registering beyond the plan’s users per database',
  }),
  SQLITE_FORBIDDEN: define<{ message: string; code?: string }>({
    status: 403,
    error: 'Forbidden',
    message: (p) => p.message,
    extra: (p) => (p.code ? { code: p.code } : {}),
    extraSchema: (z) => ({
      code: z
        .enum(['CANNOT_CHANGE_OWN_ROLE', 'CANNOT_DISABLE_SELF', 'CANNOT_DELETE_SELF', 'LAST_ADMIN'])
        .optional()
        .describe('Which guard rail refused the change'),
    }),
    description:
      'Read-only token on a write, origin not allowed, admin role required, non-admin vacuum, register without the right to, or a guard rail',
  }),
  ACCOUNT_DISABLED: define({
    status: 403,
    error: 'ACCOUNT_DISABLED',
    message: () => 'This user account is disabled.',
    description: 'Login by a disabled user',
  }),
  SQLITE_COUNT_LIMIT: define<{ current: number; limit: number; plan: string }>({
    status: 403,
    error: 'SQLite count limit reached',
    message: (p) =>
      `The ${p.plan} plan allows ${p.limit} SQLite ${p.limit === 1 ? 'database' : 'databases'} and this account has ${p.current}.`,
    extra: (p) => ({ current_count: p.current, limit: p.limit, current_plan: p.plan }),
    extraSchema: (z) => ({ current_count: z.int(), limit: z.int(), current_plan: z.string() }),
    description: 'Installing a database beyond the plan’s count (per account)',
  }),
  EMAIL_ALREADY_REGISTERED: define({
    status: 409,
    error: 'EMAIL_ALREADY_REGISTERED',
    message: () => 'A user with this email is already registered in this database.',
    description: 'The email is already in this database’s user pool',
  }),
  SQLITE_SIZE_LIMIT: define<{ sizeBytes: number; limitBytes: number; applied: boolean }>({
    status: 413,
    error: 'SQLite size limit exceeded',
    message: (p) =>
      p.applied
        ? `This write was applied and took the database to ${p.sizeBytes} bytes, over its ${p.limitBytes}-byte cap: later writes are refused until rows are deleted (then vacuum).`
        : `The database holds ${p.sizeBytes} bytes, over its ${p.limitBytes}-byte cap: delete rows (then vacuum) to write again.`,
    extra: (p) => ({ sizeBytes: p.sizeBytes, limitBytes: p.limitBytes, applied: p.applied }),
    extraSchema: (z) => ({
      sizeBytes: z.int(),
      limitBytes: z.int(),
      applied: z.boolean().describe('True for the write that crossed the cap: it was applied and stored'),
    }),
    description: 'The database is over its plan’s size cap; the write that crossed it was applied',
  }),
  SQLITE_DATABASE_UNAVAILABLE: define<{
    reason: 'restore_failed' | 'replication_failed' | 'file_lost';
    retryAfterSeconds: number;
  }>({
    status: 503,
    error: 'Service Unavailable',
    message: (p) => UNAVAILABLE_MESSAGES[p.reason],
    extra: (p) => ({ reason: p.reason, retry_after: p.retryAfterSeconds }),
    extraSchema: (z) => ({
      reason: z.enum(['restore_failed', 'replication_failed', 'file_lost']).describe('Why it is not served'),
      retry_after: z.int().describe('Seconds until a new attempt may succeed'),
    }),
    description:
      'The database is not served: its replica could not be restored, replication could not start, or its file is lost with no replica; nothing was changed',
    headers: retryAfter,
  }),
  // Point-in-time restore (src/sqlite/restore-routes.ts), beyond the spec.
  SQLITE_REPLICATION_OFF: define({
    status: 409,
    error: 'Conflict',
    message: () =>
      'This database is not replicated, so it has no restore points: point-in-time restore needs replication to S3 (see docs/operators/backup-and-restore.md).',
    description: 'Point-in-time restore or its window asked of a database that is not replicated',
  }),
  SQLITE_RESTORE_WINDOW: define<{ timestamp: string; earliest: string | null; latest: string | null }>({
    status: 400,
    error: 'Bad Request',
    message: (p) =>
      p.earliest === null
        ? `This database has no restore points yet, so it cannot be restored to ${p.timestamp}.`
        : `${p.timestamp} is outside this database's restore window: from ${p.earliest} to now (latest change replicated at ${p.latest}).`,
    extra: (p) => ({ earliest: p.earliest, latest: p.latest }),
    extraSchema: (z) => ({
      earliest: z
        .string()
        .nullable()
        .describe('The earliest time a restore can reach (null: no restore points yet)'),
      latest: z.string().nullable().describe('The time of the latest replicated change'),
    }),
    description: 'The timestamp is before the database’s earliest restore point or in the future',
  }),
  SQLITE_BOOKMARK_INVALID: define<WithMessage>({
    status: 400,
    error: 'Bad Request',
    message: (p) => p.message,
    description: 'The bookmark was not issued for this database by this platform, or was altered',
  }),
  SQLITE_RESTORE_FAILED: define<{ retryAfterSeconds: number }>({
    status: 503,
    error: 'Service Unavailable',
    message: () =>
      'The database could not be restored from its replica right now; nothing was changed. Try again shortly.',
    extra: (p) => ({ retry_after: p.retryAfterSeconds }),
    extraSchema: (z) => ({ retry_after: z.int().describe('Seconds until a new attempt may succeed') }),
    description:
      'The replica could not be read or restored (storage unreachable, integrity check); nothing was changed',
    headers: retryAfter,
  }),
  SQL_ERROR: define<{ message: string; sqliteCode?: string; statementIndex?: number }>({
    status: 400,
    error: 'SQL error',
    message: (p) => p.message,
    extra: (p) => ({
      ...(p.sqliteCode ? { code: p.sqliteCode } : {}),
      ...(p.statementIndex !== undefined ? { statementIndex: p.statementIndex } : {}),
    }),
    extraSchema: (z) => ({
      code: z.string().optional().describe('The SQLite result code, e.g. SQLITE_CONSTRAINT_UNIQUE'),
      statementIndex: z.int().optional().describe('In a batch: the 0-based index of the failing statement'),
    }),
    description: 'The statement failed or is not allowed; the message carries the database error text',
  }),
} as const;
