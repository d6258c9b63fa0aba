import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type { ErrorBody } from '../../errors/index.js';
import { packageVersion } from '../../version.js';
import { ApiRefused, ApiUnavailable, NotSentAgain } from '../errors.js';
import { exchange, IdleTimeout, neverSent, type Answered, type Exchange } from './http.js';

const USER_AGENT = `hostplane-cli/${packageVersion()}`;

/** Transient answers worth another attempt: rate limited, or a proxy or the server briefly unable. */
const RETRY_STATUSES = new Set([429, 502, 503, 504]);
/**
 * Of those, the answers of a proxy whose server may have acted (a 502 after the server reset the
 * connection, a 504 after it was too slow): not retried for a request that must not be repeated.
 */
const MAYBE_ACTED_STATUSES = new Set([502, 504]);
export const MAX_ATTEMPTS = 5;
const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 10_000;
/** A Retry-After longer than this is not waited for: the call fails (exit 5) instead. */
const MAX_RETRY_AFTER_MS = 60_000;
/** A request with no byte sent or received for this long is abandoned (and retried, when repeatable). */
export const IDLE_TIMEOUT_MS = 120_000;

export type OnRetry = (what: string, attempt: number, waitMs: number, reason: string) => void;

export interface ApiOptions {
  baseUrl: string;
  apiKey: string;
  /** Inactivity timeout of each request (IDLE_TIMEOUT_MS unless set; tests set it short). */
  idleTimeoutMs?: number;
}

/** A 429 the caller paces itself for (uploads: see upload.ts) instead of the retries here. */
export class Throttled extends Error {
  constructor(
    message: string,
    readonly waitMs: number,
  ) {
    super(message);
  }
}

export interface Answer<T> {
  body: T;
  /** How many attempts it took (1 when the first answered). */
  attempts: number;
}

/** What a request sends: JSON, or a fresh stream per attempt (a retry re-reads the file). */
export type BlobBody = { bytes: Uint8Array } | { stream: () => Readable; length: number };
/** A multipart body built whole (a bucket of blobs, see bulk.ts). */
export interface MultipartBody {
  multipart: Uint8Array;
  contentType: string;
}
type Body = { json: unknown } | BlobBody | MultipartBody;

/** The deploy API over node:http(s) (http.ts), with retries of transient failures (backoff, Retry-After honoured). */
export class DeployApi {
  /** Called before each retry (a note for the user; the progress display takes it over). */
  onRetry: OnRetry | undefined;

  constructor(private readonly options: ApiOptions) {}

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  get<T>(path: string): Promise<Answer<T>> {
    return this.request<T>('GET', path);
  }

  /**
   * A POST. `repeatable: false` for one whose repeat could do it twice (the switches of a deploy):
   * it is then sent again only when it cannot have reached the server (its connection never
   * opened: see neverSent), or when the server answered that it did not act (429, 503). A
   * connection reset or silent once the request went out, or a proxy's 502 or 504, may follow a
   * server that acted on it: the call fails instead (NotSentAgain), for the caller to settle
   * (switch.ts reads the deploy's state). The create of a deploy is repeatable: it carries an
   * Idempotency-Key (`headers`), and the server answers a repeat with the deploy it made.
   */
  post<T>(
    path: string,
    json?: unknown,
    options: { repeatable?: boolean; headers?: Record<string, string> } = {},
  ): Promise<Answer<T>> {
    return this.request<T>('POST', path, json === undefined ? undefined : { json }, false, {
      repeatable: options.repeatable,
      headers: options.headers,
    });
  }

  /**
   * A DELETE (cancelling a deploy): at most two attempts, each cut after 10 s, so a command that
   * cancels on its way out never hangs there.
   */
  delete(path: string): Promise<Answer<unknown>> {
    return this.request('DELETE', path, undefined, false, { maxAttempts: 2, timeoutMs: 10_000 });
  }

  /** A blob upload; a 429 is thrown as Throttled for the caller to pace its uploads. */
  put<T>(path: string, body: BlobBody): Promise<Answer<T>> {
    return this.request<T>('PUT', path, body, true);
  }

  /** A bulk upload of blobs (multipart); a 429 is thrown as Throttled, as for put. */
  postBulk<T>(path: string, body: MultipartBody): Promise<Answer<T>> {
    return this.request<T>('POST', path, body, true);
  }

  private async request<T>(
    method: string,
    path: string,
    body?: Body,
    throwThrottled = false,
    limits: {
      maxAttempts?: number;
      timeoutMs?: number;
      repeatable?: boolean;
      /** Sent with every attempt (the same Idempotency-Key each time). */
      headers?: Record<string, string>;
    } = {},
  ): Promise<Answer<T>> {
    const url = new URL(`${this.options.baseUrl}${path}`);
    const what = `${method} ${url.pathname}`;
    const maxAttempts = limits.maxAttempts ?? MAX_ATTEMPTS;
    for (let attempt = 1; ; attempt++) {
      let res: Answered;
      try {
        res = await exchange(url, {
          ...init(this.options.apiKey, method, body, limits.headers),
          timeoutMs: limits.timeoutMs,
          idleMs: this.options.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
        });
      } catch (err) {
        const reason = networkReason(err);
        // A name that does not resolve will not resolve on the next attempt either (EAI_AGAIN, a
        // resolver that could not answer, is retried).
        if (reason === 'ENOTFOUND')
          throw new ApiUnavailable(
            `${what}: ENOTFOUND (1 attempt: the host name ${url.hostname} does not resolve; check --api or HOSTPLANE_API_URL)`,
          );
        if (limits.repeatable === false && !neverSent(err))
          throw new NotSentAgain(what, reason, this.options.baseUrl);
        if (attempt >= maxAttempts)
          throw new ApiUnavailable(
            `${what}: ${reason} (${attempt} attempts, ${this.options.baseUrl} unreachable)`,
          );
        await this.backOff(what, attempt, undefined, reason);
        continue;
      }
      const { text } = res;
      const parsed = parseJson(text);
      if (res.status >= 200 && res.status < 300) {
        if (res.status === 204) return { body: undefined as T, attempts: attempt };
        if (parsed === undefined) throw new ApiUnavailable(`${what}: the answer is not JSON`);
        return { body: parsed as T, attempts: attempt };
      }
      if (res.status >= 300 && res.status < 400)
        throw new ApiUnavailable(
          `${what}: the server answered ${res.status}, a redirect to ${res.header('location') ?? 'elsewhere'}: set --api or HOSTPLANE_API_URL to the API's own address`,
        );
      const errorBody = asErrorBody(parsed, res.status, text);
      if (RETRY_STATUSES.has(res.status)) {
        const waitMs = retryAfterMs(res.header('retry-after'));
        const reason = `${res.status} ${errorBody.message}`;
        if (throwThrottled && res.status === 429) throw new Throttled(reason, waitMs ?? BASE_DELAY_MS);
        if (limits.repeatable === false && MAYBE_ACTED_STATUSES.has(res.status))
          throw new NotSentAgain(what, reason, this.options.baseUrl, errorBody);
        if (attempt >= maxAttempts || (waitMs !== undefined && waitMs > MAX_RETRY_AFTER_MS))
          throw new ApiUnavailable(`${what}: ${reason} (after ${attempt} attempts)`, errorBody);
        await this.backOff(what, attempt, waitMs, reason);
        continue;
      }
      if (res.status >= 500)
        throw new ApiUnavailable(`${what}: ${res.status} ${errorBody.message}`, errorBody);
      throw new ApiRefused(res.status, errorBody);
    }
  }

  private async backOff(what: string, attempt: number, retryAfter: number | undefined, reason: string) {
    // Exponential with full jitter, unless the server said how long to wait.
    const waitMs =
      retryAfter ?? Math.round(Math.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (attempt - 1)));
    this.onRetry?.(what, attempt, waitMs, reason);
    await delay(waitMs);
  }
}

function init(
  apiKey: string,
  method: string,
  body: Body | undefined,
  extra: Record<string, string> = {},
): Omit<Exchange, 'idleMs'> {
  const headers: Record<string, string> = {
    ...extra,
    'x-api-key': apiKey,
    accept: 'application/json',
    // The deploy history says which client made each deploy (src/files/deploy-client.ts).
    'user-agent': USER_AGENT,
  };
  if (body === undefined) return { method, headers };
  let bytes: Uint8Array;
  if ('json' in body) {
    headers['content-type'] = 'application/json';
    bytes = Buffer.from(JSON.stringify(body.json));
  } else if ('multipart' in body) {
    headers['content-type'] = body.contentType;
    bytes = body.multipart;
  } else {
    headers['content-type'] = 'application/octet-stream';
    if (!('bytes' in body)) {
      headers['content-length'] = String(body.length);
      return { method, headers, body: body.stream };
    }
    bytes = body.bytes;
  }
  headers['content-length'] = String(bytes.byteLength);
  return { method, headers, body: bytes };
}

/** Seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The registry body, or one made up from the status when a proxy answered with something else. */
function asErrorBody(parsed: unknown, status: number, text: string): ErrorBody {
  const body = parsed as Partial<ErrorBody> | undefined;
  if (body && typeof body.message === 'string')
    return { ...body, error: String(body.error ?? status), message: body.message };
  const snippet = text.trim().slice(0, 200);
  return { error: `HTTP ${status}`, message: snippet || `the server answered ${status}` };
}

/** The network's reason: the error's code (ECONNREFUSED, ENOTFOUND, ETIMEDOUT…), or its message. */
function networkReason(err: unknown): string {
  if (err instanceof IdleTimeout) return err.message;
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  return e.code ?? e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}
