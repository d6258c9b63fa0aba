import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, isAppError, outageError, type ErrorBody } from '../errors/index.js';
import { dependencyUnavailableTotal, type Logger } from '../observability/index.js';

/**
 * The one place errors become HTTP responses: a registry code keeps its status and body, a
 * body-parser failure becomes its code, anything else is a logged 500 that says nothing inside.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const answer = errorResponse(err, logger, req.id);
    res.set(answer.headers);
    res.status(answer.status).json(answer.body);
  };
}

/**
 * The status, headers and body an error is answered with, logged as it deserves (Express's
 * handler above and the routes served without Express share it).
 */
export function errorResponse(
  err: unknown,
  logger: Logger,
  reqId: string | undefined,
): { status: number; headers: Record<string, string>; body: ErrorBody } {
  const known = toAppError(err);
  // A capacity refusal is the system working as designed: a warning without a stack, not an error.
  if (known.code === 'CAPACITY') logger.warn({ code: known.code, reqId }, known.message);
  else if (known.code === 'DEPENDENCY_UNAVAILABLE') {
    // An outage answers many requests at once: one short line each, the cause's message only.
    dependencyUnavailableTotal.inc({ dependency: known.params.dependency });
    const cause = known.cause as { message?: unknown; code?: unknown } | undefined;
    logger.warn({ code: known.code, reqId, cause: cause?.message, causeCode: cause?.code }, known.message);
  } else if (known.status >= 500) logger.error({ err: known.cause ?? err, reqId }, known.message);
  return { status: known.status, headers: known.headers, body: known.body };
}

/**
 * The registry error behind any thrown value: an unreachable dependency is DEPENDENCY_UNAVAILABLE
 * (503), a code of the process (start-up, command line) and other unknown ones INTERNAL (cause
 * kept for the log).
 */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err.answersHttp ? err : new AppError('INTERNAL', {}, { cause: err });
  return bodyRefusal(err) ?? outageError(err) ?? new AppError('INTERNAL', {}, { cause: err });
}

/**
 * The client error behind a body-parser failure (bad JSON, too large, bad charset or encoding, a
 * corrupt gzip body, an aborted request), or undefined for anything else.
 */
export function bodyRefusal(err: unknown): AppError | undefined {
  const { type, status, expose, message } = (err ?? {}) as {
    type?: string;
    status?: number;
    expose?: boolean;
    message?: string;
  };
  if (type === 'entity.parse.failed') {
    return new AppError('INVALID_REQUEST', { message: 'The request body is not valid JSON.' });
  }
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE');
  if (type === 'charset.unsupported' || type === 'encoding.unsupported') {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', { message: 'Send the body as UTF-8 JSON.' });
  }
  if (typeof status === 'number' && status >= 400 && status < 500 && expose && message) {
    return new AppError('INVALID_REQUEST', { message });
  }
  return undefined;
}

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new AppError('NOT_FOUND', { message: `No route for ${req.method} ${req.path}` }));
};

export type { ErrorBody };
