import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AppError,
  errorBodySchema,
  errorDefinitions,
  statusOf,
  type ErrorCode,
} from '../../../src/errors/index.js';
import { errorResponse } from '../../../src/http/errors.js';
import { createLogger } from '../../../src/observability/logger.js';

const upgrade = { plan: 'free', upgradeUrl: 'https://hostplane.example/upgrade' };

/**
 * One error of every code, with its params. The mapped type makes this exhaustive: a code added to
 * the registry without a sample here fails the typecheck.
 */
const samples: { [C in ErrorCode]: AppError<C> } = {
  INVALID_REQUEST: new AppError('INVALID_REQUEST', { message: 'path is required' }),
  INVALID_SLUG: new AppError('INVALID_SLUG', { message: 'bad slug' }),
  UNAUTHORIZED: new AppError('UNAUTHORIZED', { message: 'no key', hint: 'ask for a key' }),
  KEY_SCOPE: new AppError('KEY_SCOPE'),
  NOT_FOUND: new AppError('NOT_FOUND', { message: 'no such file' }),
  UNKNOWN_ACCOUNT: new AppError('UNKNOWN_ACCOUNT', { email: 'a@example.com' }),
  UNKNOWN_SITE: new AppError('UNKNOWN_SITE', { siteId: 7 }),
  METHOD_NOT_ALLOWED: new AppError('METHOD_NOT_ALLOWED', { method: 'PUT', allow: ['GET', 'POST'] }),
  CONFLICT: new AppError('CONFLICT', { message: 'exists' }),
  SLUG_TAKEN: new AppError('SLUG_TAKEN', { slug: 'blog' }),
  PAYLOAD_TOO_LARGE: new AppError('PAYLOAD_TOO_LARGE'),
  UNSUPPORTED_MEDIA_TYPE: new AppError('UNSUPPORTED_MEDIA_TYPE', { message: 'send JSON' }),
  REQUEST_TIMEOUT: new AppError('REQUEST_TIMEOUT', {
    message: 'No part of the request body arrived for 20 seconds.',
  }),
  RATE_LIMITED: new AppError('RATE_LIMITED', { message: 'slow down', retryAfterSeconds: 30 }),
  CAPACITY: new AppError('CAPACITY', { message: 'busy', retryAfterSeconds: 5 }),
  DEPENDENCY_UNAVAILABLE: new AppError('DEPENDENCY_UNAVAILABLE', {
    dependency: 'database',
    retryAfterSeconds: 5,
  }),
  INTERNAL: new AppError('INTERNAL'),
  SIGNUP_CLOSED: new AppError('SIGNUP_CLOSED'),
  WRONG_PASSWORD: new AppError('WRONG_PASSWORD'),
  SUDO_REQUIRED: new AppError('SUDO_REQUIRED'),
  INVALID_TOKEN: new AppError('INVALID_TOKEN'),
  EMAIL_NOT_VERIFIED: new AppError('EMAIL_NOT_VERIFIED'),
  ACCOUNT_EXISTS: new AppError('ACCOUNT_EXISTS', { email: 'a@example.com' }),
  INVALID_TOTP_CODE: new AppError('INVALID_TOTP_CODE'),
  INVALID_CHALLENGE: new AppError('INVALID_CHALLENGE'),
  TOTP_ALREADY_ENABLED: new AppError('TOTP_ALREADY_ENABLED'),
  TOTP_NOT_ENABLED: new AppError('TOTP_NOT_ENABLED', { message: 'Two-factor sign-in is off.' }),
  CSRF_REJECTED: new AppError('CSRF_REJECTED', { message: 'Send the X-CSRF-Token header.' }),
  LIMIT_REACHED: new AppError('LIMIT_REACHED', { message: 'This site has 20 API keys.', limit: 20 }),
  DOMAIN_TAKEN: new AppError('DOMAIN_TAKEN', { hostname: 'www.example.com' }),
  DOMAIN_NOT_VERIFIED: new AppError('DOMAIN_NOT_VERIFIED', {
    hostname: 'www.example.com',
    record: '_hostplane.www.example.com',
    value: 'hostplane-verify=abc',
  }),
  INVALID_PATH: new AppError('INVALID_PATH', { message: 'bad path' }),
  INVALID_FILE_TYPE: new AppError('INVALID_FILE_TYPE', { message: 'bad type' }),
  INVALID_CONTENT: new AppError('INVALID_CONTENT', { message: 'bad base64' }),
  FILE_TOO_LARGE: new AppError('FILE_TOO_LARGE', { maxBytes: 10_485_760, what: 'file' }),
  VIDEO_TOO_LARGE: new AppError('VIDEO_TOO_LARGE', { maxBytes: 52_428_800 }),
  DEPLOY_FILES_TOO_LARGE: new AppError('DEPLOY_FILES_TOO_LARGE', {
    files: [{ path: 'a.pdf', size: 11_000_000, maxBytes: 10_485_760 }],
  }),
  MISSING_PATH: new AppError('MISSING_PATH', { message: 'no path' }),
  NO_FILE: new AppError('NO_FILE', { message: 'no file' }),
  UPLOAD_ABORTED: new AppError('UPLOAD_ABORTED', { message: 'stopped' }),
  UPLOAD_FAILED: new AppError('UPLOAD_FAILED'),
  HASH_MISMATCH: new AppError('HASH_MISMATCH', { expected: 'a'.repeat(64), actual: 'b'.repeat(64) }),
  IDEMPOTENCY_KEY_REUSED: new AppError('IDEMPOTENCY_KEY_REUSED', { deployId: 'k7q2m4x9a3bc' }),
  FILE_LIMIT: new AppError('FILE_LIMIT', { message: 'too many files', current: 10, limit: 10, ...upgrade }),
  FOLDER_LIMIT: new AppError('FOLDER_LIMIT', {
    message: 'too many folders',
    current: 3,
    limit: 3,
    ...upgrade,
  }),
  STORAGE_LIMIT: new AppError('STORAGE_LIMIT', {
    message: 'full',
    current: 100,
    limit: 100,
    limitFormatted: '100 B',
    currentFormatted: '100 B',
    available: 0,
    availableFormatted: '0 B',
    ...upgrade,
  }),
  FORM_LIMIT: new AppError('FORM_LIMIT', { current: 1, limit: 1, ...upgrade }),
  SUBMISSION_LIMIT: new AppError('SUBMISSION_LIMIT', {
    used: 100,
    limit: 100,
    plan: 'free',
    resetsAt: '2026-12-01T00:00:00.000Z',
  }),
  FORM_INACTIVE: new AppError('FORM_INACTIVE'),
  ORIGIN_NOT_ALLOWED: new AppError('ORIGIN_NOT_ALLOWED'),
  SUBMISSION_INVALID: new AppError('SUBMISSION_INVALID', { fields: { email: 'must be an email address' } }),
  NOTIFICATION_LINK_INVALID: new AppError('NOTIFICATION_LINK_INVALID', {
    why: 'used',
    message: 'This link was already used.',
  }),
  NOTIFICATION_MAIL_OFF: new AppError('NOTIFICATION_MAIL_OFF'),
  SQLITE_TOKEN_INVALID: new AppError('SQLITE_TOKEN_INVALID'),
  SQLITE_USER_TOKEN_MISSING: new AppError('SQLITE_USER_TOKEN_MISSING'),
  SQLITE_SESSION_INVALID: new AppError('SQLITE_SESSION_INVALID'),
  INVALID_CREDENTIALS: new AppError('INVALID_CREDENTIALS'),
  INVALID_EMAIL: new AppError('INVALID_EMAIL'),
  PASSWORD_TOO_SHORT: new AppError('PASSWORD_TOO_SHORT'),
  PASSWORD_TOO_COMMON: new AppError('PASSWORD_TOO_COMMON'),
  USER_POOL_LIMIT_REACHED: new AppError('USER_POOL_LIMIT_REACHED', { limit: 100, plan: 'free' }),
  SQLITE_FORBIDDEN: new AppError('SQLITE_FORBIDDEN', { message: 'admin only', code: 'LAST_ADMIN' }),
  ACCOUNT_DISABLED: new AppError('ACCOUNT_DISABLED'),
  SQLITE_COUNT_LIMIT: new AppError('SQLITE_COUNT_LIMIT', { current: 1, limit: 1, plan: 'free' }),
  EMAIL_ALREADY_REGISTERED: new AppError('EMAIL_ALREADY_REGISTERED'),
  SQLITE_SIZE_LIMIT: new AppError('SQLITE_SIZE_LIMIT', { sizeBytes: 2048, limitBytes: 1024, applied: true }),
  SQLITE_DATABASE_UNAVAILABLE: new AppError('SQLITE_DATABASE_UNAVAILABLE', {
    reason: 'restore_failed',
    retryAfterSeconds: 30,
  }),
  SQLITE_REPLICATION_OFF: new AppError('SQLITE_REPLICATION_OFF'),
  SQLITE_RESTORE_WINDOW: new AppError('SQLITE_RESTORE_WINDOW', {
    timestamp: '2026-01-01T00:00:00.000Z',
    earliest: '2026-01-02T00:00:00.000Z',
    latest: '2026-01-03T00:00:00.000Z',
  }),
  SQLITE_BOOKMARK_INVALID: new AppError('SQLITE_BOOKMARK_INVALID', { message: 'bad bookmark' }),
  SQLITE_RESTORE_FAILED: new AppError('SQLITE_RESTORE_FAILED', { retryAfterSeconds: 10 }),
  SQL_ERROR: new AppError('SQL_ERROR', {
    message: 'no such table: t',
    sqliteCode: 'SQLITE_ERROR',
    statementIndex: 1,
  }),
  USAGE: new AppError('USAGE', { message: 'unknown role "x"', command: 'serve' }),
  CONFIG_INVALID: new AppError('CONFIG_INVALID', { message: 'invalid configuration:\n  PORT: bad' }),
  DATA_DIR_LOCKED: new AppError('DATA_DIR_LOCKED', { pid: 42, dir: '/data/pglite' }),
  SCHEMA_NOT_CURRENT: new AppError('SCHEMA_NOT_CURRENT', {
    pending: ['0007_x'],
    total: 8,
    waitedMs: 300_000,
  }),
  PORT_IN_USE: new AppError('PORT_IN_USE', { port: 8080, address: '127.0.0.1', variable: 'PORT' }),
  PORT_NOT_ALLOWED: new AppError('PORT_NOT_ALLOWED', { port: 80 }),
  DATABASE_UNREACHABLE: new AppError('DATABASE_UNREACHABLE', {
    message: 'connect ECONNREFUSED 127.0.0.1:5432',
  }),
  NATIVE_BUILD_MISSING: new AppError('NATIVE_BUILD_MISSING', { file: '/opt/native/sqlite-guard.so' }),
};

describe('the error registry', () => {
  it('has a sample of every code', () => {
    expect(Object.keys(samples).sort()).toEqual(Object.keys(errorDefinitions).sort());
  });

  // The OpenAPI document describes each code's body with errorBodySchema: a field the body carries
  // but the schema does not name (or names otherwise) would be undocumented.
  it.each(Object.entries(samples))('%s: the body is exactly what its documented schema says', (code, err) => {
    expect(err.code).toBe(code);
    expect(errorBodySchema(err.code, z).strict().safeParse(err.body).error).toBeUndefined();
    expect(err.body.message).toBe(err.message);
    expect(err.status).toBe(statusOf(err.code));
    expect(err.status).toBeGreaterThanOrEqual(400);
    expect(err.status).toBeLessThan(600);
  });

  it('builds bodies with the extra fields of the spec', () => {
    expect(samples.FORM_LIMIT.body).toEqual({
      error: 'Form limit reached',
      message: 'Your free plan allows 1 forms and this account has 1. Delete a form or upgrade.',
      current_form_count: 1,
      form_limit: 1,
      current_plan: 'free',
      upgrade_url: 'https://hostplane.example/upgrade',
    });
    expect(samples.SQL_ERROR.body).toEqual({
      error: 'SQL error',
      message: 'no such table: t',
      code: 'SQLITE_ERROR',
      statementIndex: 1,
    });
    expect(new AppError('SQL_ERROR', { message: 'bad' }).body).toEqual({
      error: 'SQL error',
      message: 'bad',
    });
    expect(samples.RATE_LIMITED.status).toBe(429);
    expect(samples.RATE_LIMITED.body.retry_after).toBe(30);
  });

  it('answers with the headers its definition declares, built from the params', () => {
    const logger = createLogger('silent');
    const headersOf = (err: AppError) => errorResponse(err, logger, 'req-1').headers;
    expect(headersOf(samples.RATE_LIMITED)).toEqual({ 'Retry-After': '30' });
    expect(headersOf(samples.CAPACITY)).toEqual({ 'Retry-After': '5' });
    expect(headersOf(samples.DEPENDENCY_UNAVAILABLE)).toEqual({ 'Retry-After': '5' });
    expect(headersOf(samples.METHOD_NOT_ALLOWED)).toEqual({ Allow: 'GET, POST' });
    expect(headersOf(samples.SQLITE_DATABASE_UNAVAILABLE)).toEqual({ 'Retry-After': '30' });
    const withHeaders = Object.values(samples).filter((err) => Object.keys(headersOf(err)).length > 0);
    expect(withHeaders.map((err) => err.code).sort()).toEqual([
      'CAPACITY',
      'DEPENDENCY_UNAVAILABLE',
      'METHOD_NOT_ALLOWED',
      'RATE_LIMITED',
      'SQLITE_DATABASE_UNAVAILABLE',
      'SQLITE_RESTORE_FAILED',
    ]);
    for (const err of Object.values(samples)) expect(headersOf(err)).toEqual(err.headers);
  });

  // The CLI prints a start-up or command-line code's message, then its hint (src/cli/run.ts).
  it('start-up and command-line codes say what to do; the API codes leave that to their body', () => {
    expect(samples.DATA_DIR_LOCKED.message).toBe(
      'the embedded database in /data/pglite is in use by process 42',
    );
    expect(samples.DATA_DIR_LOCKED.hint).toBe(
      'Stop process 42 first, or point HOSTPLANE_DATA_DIR at another folder.',
    );
    expect(new AppError('DATA_DIR_LOCKED', { pid: 0, dir: '/d' }).hint).toMatch(
      /^Stop another process first/,
    );
    expect(samples.SCHEMA_NOT_CURRENT.message).toBe(
      'the database schema is not current after waiting 300 s: 1 of 8 migrations not applied (0007_x)',
    );
    expect(samples.USAGE.hint).toBe('Run `hostplane serve --help` for usage.');
    expect(samples.PORT_IN_USE.body).toEqual({
      error: 'Failed',
      message: 'port 8080 on 127.0.0.1 is already in use',
    });
    for (const code of ['USAGE', 'CONFIG_INVALID', 'DATA_DIR_LOCKED', 'SCHEMA_NOT_CURRENT'] as const)
      expect(samples[code].hint).toBeTruthy();
    expect(samples.UNAUTHORIZED.hint).toBeUndefined();
    expect(samples.SLUG_TAKEN.hint).toBeUndefined();
  });

  it('never answers a code of the process over HTTP: a request that meets one gets INTERNAL', () => {
    const logger = createLogger('silent');
    const missing = new AppError('NATIVE_BUILD_MISSING', { file: '/opt/hostplane/native/sqlite-guard.so' });
    const answer = errorResponse(missing, logger, 'req-1');
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual(samples.INTERNAL.body);
    expect(JSON.stringify(answer.body)).not.toContain('/opt/hostplane');
    expect(errorResponse(samples.UNAUTHORIZED, logger, 'req-2').body).toEqual(samples.UNAUTHORIZED.body);
  });

  it('keeps the cause it is given', () => {
    const cause = new Error('disk full');
    const err = new AppError('INTERNAL', {}, { cause });
    expect(err.cause).toBe(cause);
    expect(err.body).toEqual({
      error: 'Internal server error',
      message: 'Something went wrong on our side; try again.',
    });
  });
});
