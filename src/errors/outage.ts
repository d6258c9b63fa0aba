import { AppError } from './registry.js';

/**
 * The one place that tells an unreachable dependency (PostgreSQL or the S3 blob store away,
 * restarting or not ready yet) from a bug: such a failure is answered 503 with Retry-After
 * (DEPENDENCY_UNAVAILABLE), never 500, and start-up waits for it instead of exiting.
 */
export type Dependency = 'database' | 'blob store';

/** Seconds a client is told to wait before trying again during an outage. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

// SQLSTATE: 08xxx connection exceptions; 57P01 admin shutdown, 57P02 crash shutdown, 57P03
// cannot connect now (starting up, shutting down, in recovery).
const PG_UNAVAILABLE = /^(08[0-9A-Z]{3}|57P0[123])$/;

const PG_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect', // pg-pool's connectionTimeoutMillis
  'Client has encountered a connection error and is not queryable',
  'Cannot use a pool after calling end on the pool',
  'Client was closed and is not queryable',
  'Connection terminated due to connection timeout',
];

const S3_UNAVAILABLE_NAMES = new Set([
  'SlowDown',
  'ServiceUnavailable',
  'XMinioServerNotInitialized',
  'TimeoutError',
  'RequestTimeout',
  'InternalError',
]);

interface Inspectable {
  code?: unknown;
  syscall?: unknown;
  type?: unknown;
  status?: unknown;
  severity?: unknown;
  name?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
  Code?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $fault?: unknown;
}

/** Which dependency `err` says is unreachable, or undefined when it is some other failure. */
export function unreachableDependency(err: unknown, depth = 0, viaDatabase = false): Dependency | undefined {
  if (!err || typeof err !== 'object' || depth > 5) return undefined;
  const e = err as Inspectable;
  if (e instanceof AppError || fromClientRequest(e)) return undefined;
  // The AWS SDK's errors carry $metadata (a service answer) or $fault.
  const fromS3 = e.$metadata !== undefined || e.$fault !== undefined;
  // Positively the database's: below drizzle's wrapper (it names the failed query), or one of
  // pg's server errors (a severity beside the SQLSTATE).
  const fromDatabase = viaDatabase || isDrizzleQueryError(e) || typeof e.severity === 'string';
  const code = typeof e.code === 'string' ? e.code : undefined;
  const name = typeof e.name === 'string' ? e.name : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (fromS3) {
    const status = e.$metadata?.httpStatusCode;
    if (status === 503 || status === 502 || status === 504) return 'blob store';
    if (S3_UNAVAILABLE_NAMES.has(name) || S3_UNAVAILABLE_NAMES.has(String(e.Code ?? ''))) return 'blob store';
    if (code && NETWORK_CODES.has(code)) return 'blob store';
    if (message.includes('Server not initialized')) return 'blob store';
  } else if (code && PG_UNAVAILABLE.test(code)) {
    return 'database';
  } else if (PG_MESSAGES.some((text) => message.includes(text))) {
    return 'database';
  } else if (code && NETWORK_CODES.has(code) && (fromDatabase || typeof e.syscall === 'string')) {
    // A socket error of a connection we opened (it names its syscall; a client's aborted request
    // does not) that the S3 SDK did not tag ($metadata): the blob store's when its stack says so,
    // else the database's (pg reports a refused or reset connection as the socket's error).
    return !fromDatabase && isS3Stack(err) ? 'blob store' : 'database';
  }
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const found = unreachableDependency(inner, depth + 1, fromDatabase);
      if (found) return found;
    }
  }
  // drizzle wraps driver errors (DrizzleQueryError), lib-storage and our code may wrap too.
  return unreachableDependency(e.cause, depth + 1, fromDatabase);
}

/**
 * The client's own failure to send its request, never a dependency's: body-parser / raw-body
 * errors (`type` 'request.aborted', 'entity.too.large'…, a 4xx `status`) and Node's 'aborted'
 * from the incoming socket (ECONNRESET without a syscall).
 */
const fromClientRequest = (e: Inspectable): boolean =>
  (typeof e.type === 'string' && /^(request|entity|encoding|charset)\./.test(e.type)) ||
  (typeof e.status === 'number' && e.status >= 400 && e.status < 500) ||
  (e.message === 'aborted' && e.syscall === undefined);

const isDrizzleQueryError = (e: Inspectable): boolean =>
  e.name === 'DrizzleQueryError' ||
  (e.constructor as { name?: unknown } | undefined)?.name === 'DrizzleQueryError';

const isS3Stack = (err: unknown): boolean => {
  const stack = (err as { stack?: unknown }).stack;
  return typeof stack === 'string' && /@smithy|@aws-sdk/.test(stack);
};

/** The registry's 503 for an unreachable dependency, or undefined when `err` is not one. */
export function outageError(err: unknown): AppError<'DEPENDENCY_UNAVAILABLE'> | undefined {
  const dependency = unreachableDependency(err);
  if (!dependency) return undefined;
  return new AppError(
    'DEPENDENCY_UNAVAILABLE',
    { dependency, retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS },
    { cause: err },
  );
}
