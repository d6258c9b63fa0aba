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

/** The API refused a call of `deploy`, `deploys`, `rollback` or `publish` (a registry body). */
export class ApiRefused extends CommandFailed {}

/** The API could not be reached, or kept failing, after every retry. */
export class ApiUnavailable extends Error {
  constructor(
    message: string,
    readonly body?: ErrorBody,
  ) {
    super(message);
  }
}

/**
 * A request that must not be repeated (DeployApi.post `repeatable: false`) whose answer was lost
 * once it had reached the server (a connection reset or silent, a proxy's 502 or 504): the server
 * may have acted on it. Not sent again.
 */
export class NotSentAgain extends ApiUnavailable {
  constructor(
    /** The request, `METHOD /path`. */
    readonly what: string,
    /** The network's reason, or the proxy's status and message. */
    readonly reason: string,
    baseUrl: string,
    body?: ErrorBody,
  ) {
    super(`${what}: ${reason} (not sent again: it reached ${baseUrl}, which may have acted on it)`, body);
  }
}

/** A file refused before anything was sent, as --json lists it. */
export interface RefusedFile {
  path: string;
  reason: string;
  /** Over a size limit (rather than a path rule). */
  limit: boolean;
}

/** Refused before anything was sent (files the server would refuse); `exitCode` says why. */
export class LocalRefusal extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    /** The files refused, when files are what was refused. */
    readonly files?: RefusedFile[],
  ) {
    super(message);
  }
}

/**
 * What kind of failure an error of the deploy commands is, for --json (one word a script can
 * switch on; the exit code says the same in a number): files_refused (listed in `files`),
 * refused (the server or a local check said no), usage, auth, limit, unavailable.
 */
export function errorKind(err: unknown): string {
  if (err instanceof LocalRefusal && err.files) return 'files_refused';
  const code = exitCodeOf(err);
  return code === EXIT.usage
    ? 'usage'
    : code === EXIT.auth
      ? 'auth'
      : code === EXIT.limit
        ? 'limit'
        : code === EXIT.unavailable
          ? 'unavailable'
          : 'refused';
}

/**
 * Exit codes (listed in `hostplane help` and docs/developers/cli.md): 0 done; 1 the command failed (the server
 * or a local check refused it); 2 the command line (or the environment's configuration) is wrong;
 * 3 the API key was refused; 4 a limit refused it (plan quota, file size); 5 the API could not be
 * reached, or kept failing, after retries. Every registry code not named here exits 1.
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, auth: 3, limit: 4, unavailable: 5 } as const;
const EXIT_CODES: Partial<Record<ErrorCode, number>> = { USAGE: EXIT.usage, CONFIG_INVALID: EXIT.usage };

export const exitCodeOf = (err: unknown): number => {
  if (err instanceof ApiRefused) return exitCodeOfStatus(err.status, err.body);
  if (err instanceof ApiUnavailable) return EXIT.unavailable;
  if (err instanceof LocalRefusal) return err.exitCode;
  return isAppError(err) ? (EXIT_CODES[err.code] ?? EXIT.failed) : EXIT.failed;
};

/** An API answer's exit code: its body has no code, so the status and the `error` title tell. */
function exitCodeOfStatus(status: number, body: ErrorBody): number {
  if (status === 401) return EXIT.auth;
  // 403 is a key scoped to another site ("Forbidden"), or a plan limit ("File limit exceeded", …).
  if (status === 403) return /limit/i.test(body.error) ? EXIT.limit : EXIT.auth;
  if (status === 413 || (status === 400 && /too large/i.test(body.error))) return EXIT.limit;
  return EXIT.failed;
}

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
