import { z } from 'zod';

/**
 * The one registry of error codes, in the spirit of Fastify's `lib/errors.js`. Domains throw
 * `new AppError(code, params)` and know nothing of HTTP; the HTTP error middleware, the admin
 * socket and the CLI each map a code in one place, and the OpenAPI document describes every
 * route's error bodies from here.
 *
 * Each definition gives the HTTP status, the spec's `error` text (section 7), a message built
 * from the params, and the extra fields its body carries (with their schema, for the document).
 */
interface Definition<P> {
  status: number;
  /** The body's `error` field: the spec's text where it has one. */
  error: string;
  message: (params: P) => string;
  /** Extra body fields beside `error` and `message`. */
  extra?: (params: P) => Record<string, unknown>;
  /** Schema of the extra fields, for the OpenAPI document. */
  extraSchema?: z.ZodRawShape;
  /** What the code means, for the OpenAPI document. */
  description: string;
}

const define = <P = Record<never, never>>(d: Definition<P>): Definition<P> => d;
type WithMessage = { message: string };

const quotaCommon = {
  current_plan: z.string().describe('The plan type of the account'),
  upgrade_url: z.url().describe('Where the account owner can upgrade'),
};

export const errorDefinitions = {
  INVALID_REQUEST: define<WithMessage>({
    status: 400,
    error: 'Bad Request',
    message: (p) => p.message,
    description: 'The query or body does not match the documented schema; the message names the field',
  }),
  INVALID_PATH: define<WithMessage>({
    status: 400,
    error: 'Invalid path',
    message: (p) => p.message,
    description: 'A site path is empty, absolute, has `.`/`..` or empty segments, or forbidden characters',
  }),
  INVALID_FILE_TYPE: define<WithMessage>({
    status: 400,
    error: 'Invalid file type',
    message: (p) => p.message,
    description: 'The extension is not one of the allowed ones',
  }),
  INVALID_CONTENT: define<WithMessage>({
    status: 400,
    error: 'Invalid content',
    message: (p) => p.message,
    description: 'The content is not valid for its encoding',
  }),
  FILE_TOO_LARGE: define<{ maxBytes: number; what: 'file' | 'read' }>({
    status: 400,
    error: 'File too large',
    message: (p) =>
      p.what === 'read'
        ? `File is larger than ${p.maxBytes} bytes and is not returned inline; download it from its url`
        : `Files can be at most ${p.maxBytes} bytes (10 MB).`,
    extra: (p) => ({ max_size_bytes: p.maxBytes }),
    extraSchema: { max_size_bytes: z.int().describe('The largest size accepted, in bytes') },
    description: 'The file is over the size limit (10 MB)',
  }),
  VIDEO_TOO_LARGE: define<{ maxBytes: number }>({
    status: 400,
    error: 'File too large',
    message: (p) => `Videos can be at most ${p.maxBytes} bytes (50 MB).`,
    extra: (p) => ({ max_size: p.maxBytes }),
    extraSchema: { max_size: z.int().describe('The largest video accepted, in bytes') },
    description: 'The video is over 50 MB',
  }),
  MISSING_PATH: define<WithMessage>({
    status: 400,
    error: 'Missing path',
    message: (p) => p.message,
    description: 'The multipart `path` field is missing or empty',
  }),
  NO_FILE: define<WithMessage>({
    status: 400,
    error: 'No file provided',
    message: (p) => p.message,
    description: 'The multipart body has no `file` part',
  }),
  INVALID_SLUG: define<WithMessage>({
    status: 400,
    error: 'Invalid slug',
    message: (p) => p.message,
    description: 'A slug breaks the subdomain rule',
  }),
  UNAUTHORIZED: define<{ message: string; hint: string }>({
    status: 401,
    error: 'Unauthorized',
    message: (p) => p.message,
    extra: (p) => ({ hint_for_ai: p.hint }),
    extraSchema: {
      hint_for_ai: z.string().describe('What an AI agent should do next (ask the user for a key, …)'),
    },
    description: 'The credential is missing, empty, unknown, expired or revoked',
  }),
  KEY_SCOPE: define({
    status: 403,
    error: 'Forbidden',
    message: () => 'This API key is scoped to a different site.',
    description: 'The API key belongs to another site than the one named',
  }),
  FILE_LIMIT: define<{ message: string; current: number; limit: number; plan: string; upgradeUrl: string }>({
    status: 403,
    error: 'File limit exceeded',
    message: (p) => p.message,
    extra: (p) => ({
      current_file_count: p.current,
      file_limit: p.limit,
      current_plan: p.plan,
      upgrade_url: p.upgradeUrl,
    }),
    extraSchema: {
      current_file_count: z.int(),
      file_limit: z.int(),
      ...quotaCommon,
    },
    description: "The plan's file limit would be exceeded",
  }),
  FOLDER_LIMIT: define<{ message: string; current: number; limit: number; plan: string; upgradeUrl: string }>(
    {
      status: 403,
      error: 'Folder limit exceeded',
      message: (p) => p.message,
      extra: (p) => ({
        current_folder_count: p.current,
        folder_limit: p.limit,
        current_plan: p.plan,
        upgrade_url: p.upgradeUrl,
      }),
      extraSchema: { current_folder_count: z.int(), folder_limit: z.int(), ...quotaCommon },
      description: "Folders are capped at the plan's file limit",
    },
  ),
  STORAGE_LIMIT: define<{
    message: string;
    current: number;
    limit: number;
    limitFormatted: string;
    currentFormatted: string;
    available: number;
    availableFormatted: string;
    plan: string;
    upgradeUrl: string;
  }>({
    status: 403,
    error: 'Storage limit exceeded',
    message: (p) => p.message,
    extra: (p) => ({
      current_storage: p.current,
      storage_limit: p.limit,
      storage_limit_formatted: p.limitFormatted,
      current_storage_formatted: p.currentFormatted,
      available_storage: p.available,
      available_storage_formatted: p.availableFormatted,
      current_plan: p.plan,
      upgrade_url: p.upgradeUrl,
    }),
    extraSchema: {
      current_storage: z.int(),
      storage_limit: z.int(),
      storage_limit_formatted: z.string(),
      current_storage_formatted: z.string(),
      available_storage: z.int(),
      available_storage_formatted: z.string(),
      ...quotaCommon,
    },
    description: "The plan's storage limit would be exceeded",
  }),
  NOT_FOUND: define<WithMessage>({
    status: 404,
    error: 'Not found',
    message: (p) => p.message,
    description: 'No such file, folder, site or route',
  }),
  UNKNOWN_ACCOUNT: define<{ email: string }>({
    status: 404,
    error: 'Not found',
    message: (p) => `no account with the email ${p.email}`,
    description: 'No account has that email',
  }),
  UNKNOWN_SITE: define<{ siteId: number }>({
    status: 404,
    error: 'Not found',
    message: (p) => `site ${p.siteId} does not exist`,
    description: 'No site has that id',
  }),
  UPLOAD_ABORTED: define<WithMessage>({
    status: 404, // spec 4.4
    error: 'Upload aborted',
    message: (p) => p.message,
    description: 'The client stopped sending before the upload completed (nothing was stored)',
  }),
  METHOD_NOT_ALLOWED: define<{ method: string; allow: string[] }>({
    status: 405,
    error: 'Method Not Allowed',
    message: (p) => `${p.method} is not allowed here; use ${p.allow.join(', ')}.`,
    description: 'The path exists but not with this method (see the Allow header)',
  }),
  CONFLICT: define<WithMessage>({
    status: 409,
    error: 'Conflict',
    message: (p) => p.message,
    description: 'Something already exists at the target path',
  }),
  SLUG_TAKEN: define<{ slug: string }>({
    status: 409,
    error: 'Conflict',
    message: (p) => `the slug "${p.slug}" is already taken`,
    description: 'Another site has that slug',
  }),
  PAYLOAD_TOO_LARGE: define({
    status: 413,
    error: 'Payload Too Large',
    message: () => 'The request body is too large.',
    description: 'The request body is over the limit of this endpoint',
  }),
  UNSUPPORTED_MEDIA_TYPE: define<WithMessage>({
    status: 415,
    error: 'Unsupported Media Type',
    message: (p) => p.message,
    description: 'The body is not UTF-8 JSON (or not the documented media type)',
  }),
  RATE_LIMITED: define<{ message: string; retryAfterSeconds: number }>({
    status: 429,
    error: 'Too Many Requests',
    message: (p) => p.message,
    extra: (p) => ({ retry_after: p.retryAfterSeconds }),
    extraSchema: { retry_after: z.int().describe('Seconds until a new attempt can succeed') },
    description: 'Too many requests from this address; see Retry-After',
  }),
  CAPACITY: define<{ message: string; retryAfterSeconds: number }>({
    status: 503,
    error: 'Service Unavailable',
    message: (p) => p.message,
    extra: (p) => ({ retry_after: p.retryAfterSeconds }),
    extraSchema: { retry_after: z.int().describe('Seconds until a new attempt may succeed') },
    description: 'A platform-wide capacity limit is reached for now; see Retry-After',
  }),
  FORM_LIMIT: define<{ current: number; limit: number; plan: string; upgradeUrl: string }>({
    status: 403,
    error: 'Form limit reached',
    message: (p) =>
      `Your ${p.plan} plan allows ${p.limit} forms and this account has ${p.current}. Delete a form or upgrade.`,
    extra: (p) => ({
      current_form_count: p.current,
      form_limit: p.limit,
      current_plan: p.plan,
      upgrade_url: p.upgradeUrl,
    }),
    extraSchema: {
      current_form_count: z.int().describe('Forms the account has'),
      form_limit: z.int().describe('Forms the plan allows'),
      ...quotaCommon,
    },
    description: 'The account already has as many forms as its plan allows',
  }),
  SUBMISSION_LIMIT: define<{ used: number; limit: number; plan: string; resetsAt: string }>({
    status: 403,
    error: 'Submission limit reached',
    message: (p) =>
      `This form's account has used its ${p.limit} submissions for this month (${p.plan} plan); submissions are accepted again from ${p.resetsAt}.`,
    extra: (p) => ({ submissions_this_month: p.used, submission_limit: p.limit, resets_at: p.resetsAt }),
    extraSchema: {
      submissions_this_month: z.int().describe('Accepted submissions this calendar month (UTC)'),
      submission_limit: z.int().describe('Submissions per month the plan allows'),
      resets_at: z.iso.datetime().describe('When the monthly counter resets (the 1st of next month, UTC)'),
    },
    description: 'The account has used its monthly submissions; new ones are refused until the 1st (UTC)',
  }),
  FORM_INACTIVE: define({
    status: 403,
    error: 'Form disabled',
    message: () => 'This form is not accepting submissions.',
    description: 'The form is disabled (toggle it to accept submissions again)',
  }),
  ORIGIN_NOT_ALLOWED: define({
    status: 403,
    error: 'Forbidden',
    message: () => "Submissions to this form are accepted only from the account's sites.",
    description: "The request's Origin is not one of the account's sites or custom domains",
  }),
  SUBMISSION_INVALID: define<{ fields: Record<string, string> }>({
    status: 400,
    error: 'Validation failed',
    message: (p) =>
      Object.entries(p.fields)
        .map(([name, problem]) => `${name}: ${problem}`)
        .join('; '),
    extra: (p) => ({ fields: p.fields }),
    extraSchema: {
      fields: z.record(z.string(), z.string()).describe('What is wrong with each field, by field name'),
    },
    description:
      'A submitted value does not fit its field (required, email, url, tel, number, select option)',
  }),
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
    extraSchema: { hint_for_ai: z.string().describe('What an agent should do next') },
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
  PASSWORD_TOO_COMMON: define({
    status: 400,
    error: 'PASSWORD_TOO_COMMON',
    message: () => 'This password is too common: choose one that is harder to guess.',
    description: 'The password is on the list of trivial passwords',
  }),
  USER_POOL_LIMIT_REACHED: define<{ limit: number; plan: string }>({
    status: 402,
    error: 'USER_POOL_LIMIT_REACHED',
    message: (p) => `This database already has the ${p.limit} users the ${p.plan} plan allows.`,
    extra: (p) => ({ user_limit: p.limit, current_plan: p.plan }),
    extraSchema: { user_limit: z.int(), current_plan: z.string() },
    description: 'Registering beyond the plan’s users per database',
  }),
  SQLITE_FORBIDDEN: define<{ message: string; code?: string }>({
    status: 403,
    error: 'Forbidden',
    message: (p) => p.message,
    extra: (p) => (p.code ? { code: p.code } : {}),
    extraSchema: {
      code: z
        .enum(['CANNOT_CHANGE_OWN_ROLE', 'CANNOT_DISABLE_SELF', 'CANNOT_DELETE_SELF', 'LAST_ADMIN'])
        .optional()
        .describe('Which guard rail refused the change'),
    },
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
      `The ${p.plan} plan allows ${p.limit} SQLite databases and this account has ${p.current}.`,
    extra: (p) => ({ current_count: p.current, limit: p.limit, current_plan: p.plan }),
    extraSchema: { current_count: z.int(), limit: z.int(), current_plan: z.string() },
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
    extraSchema: {
      sizeBytes: z.int(),
      limitBytes: z.int(),
      applied: z.boolean().describe('True for the write that crossed the cap: it was applied and stored'),
    },
    description: 'The database is over its plan’s size cap; the write that crossed it was applied',
  }),
  SQL_ERROR: define<{ message: string; sqliteCode?: string; statementIndex?: number }>({
    status: 400,
    error: 'SQL error',
    message: (p) => p.message,
    extra: (p) => ({
      ...(p.sqliteCode ? { code: p.sqliteCode } : {}),
      ...(p.statementIndex !== undefined ? { statementIndex: p.statementIndex } : {}),
    }),
    extraSchema: {
      code: z.string().optional().describe('The SQLite result code, e.g. SQLITE_CONSTRAINT_UNIQUE'),
      statementIndex: z.int().optional().describe('In a batch: the 0-based index of the failing statement'),
    },
    description: 'The statement failed or is not allowed; the message carries the database error text',
  }),
  UPLOAD_FAILED: define({
    status: 500,
    error: 'Upload failed',
    message: () => 'The video could not be stored; try again.',
    description: 'The upload failed on our side (the cause is logged, not sent)',
  }),
  INTERNAL: define({
    status: 500,
    error: 'Internal server error',
    message: () => 'Something went wrong on our side; try again.',
    description: 'A failure on our side (the cause is logged, not sent)',
  }),
} as const;

export type ErrorCode = keyof typeof errorDefinitions;
type ParamsOf<C extends ErrorCode> = (typeof errorDefinitions)[C] extends Definition<infer P> ? P : never;
/** Codes whose definition takes no params. */
type ParamlessCode = {
  [C in ErrorCode]: Record<never, never> extends ParamsOf<C> ? C : never;
}[ErrorCode];

/** The JSON body of an error: `error` and `message`, plus the code's extra fields. */
export interface ErrorBody {
  error: string;
  message: string;
  [extra: string]: unknown;
}

/** An error a domain throws: a registry code and the params of its message and extra fields. */
export class AppError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly params: ParamsOf<C>;

  constructor(
    ...args: C extends ParamlessCode
      ? [code: C, params?: ParamsOf<C>, options?: { cause?: unknown }]
      : [code: C, params: ParamsOf<C>, options?: { cause?: unknown }]
  ) {
    const [code, params, options] = args as [C, ParamsOf<C> | undefined, { cause?: unknown }?];
    const definition = errorDefinitions[code] as Definition<ParamsOf<C>>;
    const resolved = (params ?? {}) as ParamsOf<C>;
    super(definition.message(resolved), options);
    this.name = 'AppError';
    this.code = code;
    this.params = resolved;
  }

  get status(): number {
    return errorDefinitions[this.code].status;
  }

  /** The response body: `{error, message, ...extra}`. */
  get body(): ErrorBody {
    const definition = errorDefinitions[this.code] as Definition<ParamsOf<C>>;
    return { error: definition.error, message: this.message, ...definition.extra?.(this.params) };
  }
}

export function isAppError<C extends ErrorCode>(err: unknown, code?: C): err is AppError<C> {
  return err instanceof AppError && (code === undefined || err.code === code);
}

/** The schema of a code's body, for the OpenAPI document. */
export function errorBodySchema(code: ErrorCode): z.ZodObject {
  const definition: Definition<never> = errorDefinitions[code];
  return z
    .object({
      error: z.literal(definition.error),
      message: z.string().describe('What went wrong, in words'),
      ...definition.extraSchema,
    })
    .describe(`${code}: ${definition.description}`);
}

export function statusOf(code: ErrorCode): number {
  return errorDefinitions[code].status;
}
