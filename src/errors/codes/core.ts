import { define, retryAfter, type WithMessage } from '../define.js';

/**
 * Codes every domain may answer with: malformed requests, credentials, lookups, conflicts, limits on
 * the request itself, and failures on our side.
 */
export const coreErrors = {
  INVALID_REQUEST: define<WithMessage>({
    status: 400,
    error: 'Bad Request',
    message: (p) => p.message,
    description: 'The query or body does not match the documented schema; the message names the field',
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
    extraSchema: (z) => ({
      hint_for_ai: z.string().describe('What an AI agent should do next (ask the user for a key, …)'),
    }),
    description: 'The credential is missing, empty, unknown, expired or revoked',
  }),
  KEY_SCOPE: define({
    status: 403,
    error: 'Forbidden',
    message: () => 'This API key is scoped to a different site.',
    description: 'The API key belongs to another site than the one named',
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
  METHOD_NOT_ALLOWED: define<{ method: string; allow: string[] }>({
    status: 405,
    error: 'Method Not Allowed',
    message: (p) => `${p.method} is not allowed here; use ${p.allow.join(', ')}.`,
    description: 'The path exists but not with this method (see the Allow header)',
    headers: (p) => ({ Allow: p.allow.join(', ') }),
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
  PAYLOAD_TOO_LARGE: define<{ message?: string }>({
    status: 413,
    error: 'Payload Too Large',
    message: (p) => p.message ?? 'The request body is too large.',
    description: 'The request body is over the limit of this endpoint',
  }),
  UNSUPPORTED_MEDIA_TYPE: define<WithMessage>({
    status: 415,
    error: 'Unsupported Media Type',
    message: (p) => p.message,
    description: 'The body is not UTF-8 JSON (or not the documented media type)',
  }),
  REQUEST_TIMEOUT: define<WithMessage>({
    status: 408,
    error: 'Request Timeout',
    message: (p) => p.message,
    description: 'The request body stalled or arrived below the minimum rate; the connection is closed',
  }),
  RATE_LIMITED: define<{ message: string; retryAfterSeconds: number }>({
    status: 429,
    error: 'Too Many Requests',
    message: (p) => p.message,
    extra: (p) => ({ retry_after: p.retryAfterSeconds }),
    extraSchema: (z) => ({ retry_after: z.int().describe('Seconds until a new attempt can succeed') }),
    description: 'Too many requests from this address; see Retry-After',
    headers: retryAfter,
  }),
  CAPACITY: define<{ message: string; retryAfterSeconds: number }>({
    status: 503,
    error: 'Service Unavailable',
    message: (p) => p.message,
    extra: (p) => ({ retry_after: p.retryAfterSeconds }),
    extraSchema: (z) => ({ retry_after: z.int().describe('Seconds until a new attempt may succeed') }),
    description: 'A platform-wide capacity limit is reached for now; see Retry-After',
    headers: retryAfter,
  }),
  DEPENDENCY_UNAVAILABLE: define<{ dependency: 'database' | 'blob store'; retryAfterSeconds: number }>({
    status: 503,
    error: 'Service Unavailable',
    message: (p) => `The ${p.dependency} is not reachable right now; try again shortly.`,
    extra: (p) => ({ retry_after: p.retryAfterSeconds }),
    extraSchema: (z) => ({ retry_after: z.int().describe('Seconds until a new attempt may succeed') }),
    description:
      'A dependency (the database or the blob store) is unreachable for now; nothing was changed; see Retry-After',
    headers: retryAfter,
  }),
  INTERNAL: define({
    status: 500,
    error: 'Internal server error',
    message: () => 'Something went wrong on our side; try again.',
    description: 'A failure on our side (the cause is logged, not sent)',
  }),
} as const;
