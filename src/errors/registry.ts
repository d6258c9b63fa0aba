import type { z } from 'zod';
import { accountErrors } from './codes/accounts.js';
import { coreErrors } from './codes/core.js';
import { fileErrors } from './codes/files.js';
import { formErrors } from './codes/forms.js';
import { quotaErrors } from './codes/quota.js';
import { sqliteErrors } from './codes/sqlite.js';
import { startupErrors } from './codes/startup.js';
import type { Definition } from './define.js';

/**
 * The one registry of error codes, in the spirit of Fastify's `lib/errors.js`. Domains throw
 * `new AppError(code, params)` and know nothing of HTTP; the HTTP error middleware, the admin
 * socket and the CLI (messages, hints, exit codes) each map a code in one place, and the OpenAPI
 * document describes every route's error bodies from here. Start-up and command-line failures are
 * codes too (codes/startup.ts).
 *
 * The definitions live by group in codes/ (see define.ts for what one holds); this gathers them.
 */
export const errorDefinitions = {
  ...coreErrors,
  ...fileErrors,
  ...quotaErrors,
  ...formErrors,
  ...sqliteErrors,
  ...startupErrors,
  ...accountErrors,
} as const;

// A code defined in two groups would silently replace the other in the spread: make it a type error.
type Groups = [
  typeof coreErrors,
  typeof fileErrors,
  typeof quotaErrors,
  typeof formErrors,
  typeof sqliteErrors,
  typeof startupErrors,
  typeof accountErrors,
];
type KeysOfEach<U> = U extends unknown ? keyof U : never;
type SharedCodes<G extends unknown[]> = G extends [infer First, ...infer Rest]
  ? Extract<keyof First, KeysOfEach<Rest[number]>> | SharedCodes<Rest>
  : never;
const noCodeInTwoGroups: [SharedCodes<Groups>] extends [never] ? true : SharedCodes<Groups> = true;
void noCodeInTwoGroups;

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

  /** The headers its definition declares for every answer with this code (none: `{}`). */
  get headers(): Record<string, string> {
    const { headers } = errorDefinitions[this.code] as Definition<ParamsOf<C>>;
    return typeof headers === 'function' ? headers(this.params) : { ...headers };
  }

  /** What to do about it, when the code says (start-up and command-line codes). */
  get hint(): string | undefined {
    const definition = errorDefinitions[this.code] as Definition<ParamsOf<C>>;
    return definition.hint?.(this.params);
  }

  /** Whether this code may be an HTTP answer (start-up and command-line codes may not). */
  get answersHttp(): boolean {
    return (errorDefinitions[this.code] as Definition<ParamsOf<C>>).http !== false;
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

/** The schema of a code's body, for the OpenAPI document (built with the caller's zod). */
export function errorBodySchema(code: ErrorCode, zod: typeof z): z.ZodObject {
  const definition: Definition<never> = errorDefinitions[code];
  return zod
    .object({
      error: zod.literal(definition.error),
      message: zod.string().describe('What went wrong, in words'),
      ...definition.extraSchema?.(zod),
    })
    .describe(`${code}: ${definition.description}`);
}

export function statusOf(code: ErrorCode): number {
  return errorDefinitions[code].status;
}
