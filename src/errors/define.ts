import type { z } from 'zod';

/**
 * One code's definition: the HTTP status, the spec's `error` text (section 7), a message built
 * from the params, the extra fields its body carries (with their schema, for the document), and
 * the headers its answer carries.
 */
export interface Definition<P> {
  status: number;
  /** The body's `error` field: the spec's text where it has one. */
  error: string;
  message: (params: P) => string;
  /** Extra body fields beside `error` and `message`. */
  extra?: (params: P) => Record<string, unknown>;
  /**
   * Schema of the extra fields, for the OpenAPI document: built from the zod it is given, so that
   * the registry loads no zod (the CLI, which only throws and prints codes, never pays for it).
   */
  extraSchema?: (zod: typeof z) => z.ZodRawShape;
  /** What the code means, for the OpenAPI document. */
  description: string;
  /** Headers every answer with this code carries (Retry-After, Allow): fixed, or built from the params. */
  headers?: Record<string, string> | ((params: P) => Record<string, string>);
  /** What to do about it, printed under the message by the CLI (start-up and command-line codes). */
  hint?: (params: P) => string;
  /**
   * false: a code of the process, never an HTTP answer (its message may name server paths). A
   * request that meets one is answered INTERNAL, with the code kept as the logged cause.
   */
  http?: false;
}

/** The Retry-After header of a code whose params say when to try again. */
export const retryAfter = (p: { retryAfterSeconds: number }) => ({
  'Retry-After': String(p.retryAfterSeconds),
});

/** Types a definition by its params, so `AppError` asks for exactly those. */
export const define = <P = Record<never, never>>(d: Definition<P>): Definition<P> => d;
export type WithMessage = { message: string };

/** The params every plan-limit code takes: the account's plan and where to upgrade it. */
export type PlanParams = { plan: string; upgradeUrl: string };

/** The fields every plan-limit body shares (files, folders, storage, forms): schema, then values. */
export const quotaCommon = (zod: typeof z) => ({
  current_plan: zod.string().describe('The plan type of the account'),
  upgrade_url: zod.url().describe('Where the account owner can upgrade'),
});
export const quotaCommonOf = (p: PlanParams) => ({ current_plan: p.plan, upgrade_url: p.upgradeUrl });
