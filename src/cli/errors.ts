import { isAppError, type ErrorBody } from '../errors/index.js';

/**
 * Registry errors as the admin channel reports them: the code's HTTP status and body. The admin
 * socket answers with this and the CLI prints its message, so both say what the HTTP API says.
 * Undefined for anything that is not a registry error (a bug or an outage: the caller decides).
 */
export function registryError(err: unknown): { status: number; body: ErrorBody } | undefined {
  return isAppError(err) ? { status: err.status, body: err.body } : undefined;
}

/** The command line was wrong: exit 2 with the message and where to read the usage. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The command whose `--help` to point at, e.g. `admin create-site`. */
    readonly command?: string,
  ) {
    super(message);
  }
}

/** A failure the admin channel reported (a registry error from the server, or from the local run). */
export class CommandFailed extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message);
  }
}

/** An error that says what to do about it: printed under the message. */
export const hintOf = (err: unknown): string | undefined => {
  const hint = (err as { hint?: unknown } | null)?.hint;
  return typeof hint === 'string' ? hint : undefined;
};
