import { S3ServiceException } from '@aws-sdk/client-s3';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { AppError, outageError, unreachableDependency } from '../../../src/errors/index.js';
import { errorResponse, toAppError } from '../../../src/http/errors.js';
import { createLogger, dependencyUnavailableTotal } from '../../../src/observability/index.js';

// Issue 16, item 15: the one classifier of "a dependency is unreachable" (a 503, never a 500).

const errno = (code: string, message = `connect ${code} 127.0.0.1:5432`) =>
  Object.assign(new Error(message), { code, errno: -1, syscall: 'connect' });
const pgError = (code: string, message: string) =>
  Object.assign(new Error(message), { code, severity: 'FATAL' });
const s3Error = (name: string, status: number, message = name) =>
  new S3ServiceException({ name, $fault: 'server', $metadata: { httpStatusCode: status }, message });

describe('unreachableDependency', () => {
  it.each([
    ['ECONNREFUSED', errno('ECONNREFUSED')],
    ['ECONNRESET', errno('ECONNRESET', 'read ECONNRESET')],
    ['ETIMEDOUT', errno('ETIMEDOUT')],
    ['EPIPE', errno('EPIPE', 'write EPIPE')],
    ['a lost connection', new Error('Connection terminated unexpectedly')],
    ['a connect timeout', new Error('Connection terminated due to connection timeout')],
    ['a pool wait timeout', new Error('timeout exceeded when trying to connect')],
    ['admin shutdown 57P01', pgError('57P01', 'terminating connection due to administrator command')],
    [
      'crash shutdown 57P02',
      pgError('57P02', 'terminating connection due to crash of another server process'),
    ],
    ['starting up 57P03', pgError('57P03', 'the database system is starting up')],
    ['class 08', pgError('08006', 'connection failure')],
    ['refused on every address', new AggregateError([errno('ECONNREFUSED'), errno('ECONNREFUSED')])],
    [
      'a reset below drizzle',
      new DrizzleQueryError('select 1', [], Object.assign(new Error('reset'), { code: 'ECONNRESET' })),
    ],
    [
      'wrapped by drizzle',
      new Error('Failed query: select 1', { cause: new Error('Connection terminated unexpectedly') }),
    ],
  ])('the database: %s', (_name, err) => {
    expect(unreachableDependency(err)).toBe('database');
    expect(toAppError(err).status).toBe(503);
  });

  it.each([
    ['503 ServiceUnavailable', s3Error('ServiceUnavailable', 503)],
    ['SlowDown', s3Error('SlowDown', 503)],
    [
      'MinIO starting',
      s3Error('XMinioServerNotInitialized', 503, 'Server not initialized yet, please try again.'),
    ],
    [
      'a refused connection from the SDK',
      Object.assign(errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:9000'), {
        $metadata: { attempts: 3 },
      }),
    ],
    ['a gateway error', s3Error('BadGateway', 502)],
  ])('the blob store: %s', (_name, err) => {
    expect(unreachableDependency(err)).toBe('blob store');
  });

  it.each([
    ['a registry error', new AppError('NOT_FOUND', { message: 'no' })],
    ['a unique violation', pgError('23505', 'duplicate key value violates unique constraint')],
    ['a syntax error', pgError('42601', 'syntax error')],
    ['a bug', new TypeError('x is undefined')],
    ['an S3 access denial', s3Error('AccessDenied', 403)],
    ['a missing key', s3Error('NoSuchKey', 404)],
    ['not an error', 'text'],
    // The client's own aborted request: body-parser's (raw-body's) error, and Node's from the socket.
    [
      'a request body aborted by the client (body-parser)',
      Object.assign(new Error('request aborted'), {
        code: 'ECONNABORTED',
        type: 'request.aborted',
        status: 400,
        expected: 100,
        received: 10,
      }),
    ],
    ['a request stream aborted by the client', Object.assign(new Error('aborted'), { code: 'ECONNRESET' })],
    ['a socket code with no syscall', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
    [
      'a wrapped client abort',
      new Error('upload failed', {
        cause: Object.assign(new Error('request aborted'), { code: 'ECONNABORTED', type: 'request.aborted' }),
      }),
    ],
  ])('not an outage: %s', (_name, err) => {
    expect(unreachableDependency(err)).toBeUndefined();
    expect(outageError(err)).toBeUndefined();
  });

  it('answers with the registry body: 503, Service Unavailable, retry_after', () => {
    const err = outageError(new Error('Connection terminated unexpectedly'));
    expect(err?.status).toBe(503);
    expect(err?.body).toEqual({
      error: 'Service Unavailable',
      message: 'The database is not reachable right now; try again shortly.',
      retry_after: 5,
    });
  });

  it('answers 503 with Retry-After and counts it by dependency', async () => {
    const count = async () =>
      (await dependencyUnavailableTotal.get()).values.find((v) => v.labels.dependency === 'blob store')
        ?.value ?? 0;
    const before = await count();
    const answer = errorResponse(s3Error('SlowDown', 503), createLogger('silent'), 'req-1');
    expect(answer).toMatchObject({ status: 503, headers: { 'Retry-After': '5' } });
    expect(answer.body).toEqual({
      error: 'Service Unavailable',
      message: 'The blob store is not reachable right now; try again shortly.',
      retry_after: 5,
    });
    expect(await count()).toBe(before + 1);
  });
});
