import { AppError, isAppError, type ErrorBody, type ErrorCode } from '../errors/index.js';

/** The command line was wrong (exit 2); `command` is the one whose `--help` to point at. */
export const usageError = (message: string, command?: string): AppError<'USAGE'> =>
  new AppError('USAGE', { message, command });

/** A failure the admin channel reported (a registry error from the server, or from the local run). */
export class CommandFailed extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message);
  }
}

/**
 * Exit codes: 0 done, 1 the command failed, 2 the command line (or the environment's
 * configuration) is wrong. Every code not named here exits 1.
 */
const EXIT_CODES: Partial<Record<ErrorCode, number>> = { USAGE: 2, CONFIG_INVALID: 2 };

export const exitCodeOf = (err: unknown): number => (isAppError(err) ? (EXIT_CODES[err.code] ?? 1) : 1);

/**
 * A failure a user can fix, as a registry code: the ports, the database. Node's own errors (a port
 * in use, a refused connection) are named here; registry errors pass as they are.
 */
export function asStartupError(err: unknown): AppError | undefined {
  if (isAppError(err)) return err;
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.syscall === 'listen' && e.code === 'EADDRINUSE') {
    // Two ports are opened: the public one (PORT) and the metrics one (HOSTPLANE_METRICS_PORT).
    const metricsPort = process.env.HOSTPLANE_METRICS_PORT || '9090';
    const variable = String(e.port) === metricsPort ? 'HOSTPLANE_METRICS_PORT' : 'PORT';
    return new AppError('PORT_IN_USE', { port: e.port, address: e.address, variable }, { cause: err });
  }
  if (e?.syscall === 'listen' && e.code === 'EACCES') {
    return new AppError('PORT_NOT_ALLOWED', { port: e.port }, { cause: err });
  }
  if (e?.code === 'ECONNREFUSED' || e?.code === 'ENOTFOUND' || e?.code === 'ETIMEDOUT') {
    return new AppError('DATABASE_UNREACHABLE', { message: messageOf(err) }, { cause: err });
  }
  return undefined;
}

/** Node reports a refused connection to a name with two addresses as an AggregateError, no message. */
export const messageOf = (err: unknown): string => {
  const e = err as { message?: string; errors?: Error[] } | null;
  return e?.message || e?.errors?.[0]?.message || String(err);
};
