import { ServerResponse, type RequestListener } from 'node:http';
import { context, propagation } from '@opentelemetry/api';
import inject from 'light-my-request';
import { packageVersion } from '../version.js';

const USER_AGENT = `hostplane-mcp/${packageVersion()}`;

/**
 * Express swaps every response's prototype for its own (a child of http.ServerResponse), which
 * would drop light-my-request's overrides of write/end (the answer would come back empty): copied
 * onto the response itself first, they survive the swap. light-my-request documents no other way
 * (it has a `Request` option, no `Response` one). Every method its Response prototype defines is
 * copied (writeHead, write, end, destroy, setTimeout, addTrailers in 6.x), not a fixed list, so
 * an upgrade that overrides one more is not silently lost.
 */
function keepInjectedResponse(listener: RequestListener): RequestListener {
  return (req, res) => {
    const proto = Object.getPrototypeOf(res) as Record<string, unknown>;
    const own = res as unknown as Record<string, unknown>;
    if (proto !== (ServerResponse.prototype as unknown))
      for (const name of Object.getOwnPropertyNames(proto))
        if (name !== 'constructor' && typeof proto[name] === 'function') own[name] = proto[name];
    listener(req, res);
  };
}

/** Who calls: the MCP request's credential, client address (as trust proxy resolved it) and id. */
export interface Caller {
  /** The site API key (permanent or temporary), when the MCP request carried one. */
  key?: string;
  remoteAddress: string;
  /**
   * The API's own host (the base URL's), never the MCP request's Host: the injected calls must
   * reach the API's routes whatever the caller sent, not a site's host that became one meanwhile.
   */
  host: string;
  /** The MCP request's id, carried as X-Request-Id so the API calls' log lines share it. */
  requestId: string;
}

/** A public API answer that is not a success: its status and body (`{error, message, …}`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly retryAfter?: string,
  ) {
    super(typeof body.message === 'string' ? body.message : String(body.error ?? `HTTP ${status}`));
    this.name = 'ApiError';
  }
}

export interface CallOptions {
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  /** A raw body (a deploy blob; a bulk upload's multipart body, its type in `headers`). */
  bytes?: Buffer;
  headers?: Record<string, string>;
}

/**
 * The public API, called in-process: each tool is one or more requests injected into the app's own
 * listener (light-my-request), so validation, plan limits, rate limits, error texts and the
 * cluster's SQLite forwarding are exactly those of HTTP. No socket, no port, no second copy of
 * any domain rule. The trace context goes along, so the API's spans nest under the tool's.
 */
export class PublicApi {
  constructor(
    private readonly listener: () => RequestListener,
    readonly caller: Caller,
  ) {}

  get hasKey(): boolean {
    return this.caller.key !== undefined;
  }

  /** The JSON answer of a 2xx; anything else is thrown as an ApiError. */
  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: CallOptions = {},
  ): Promise<T> {
    const headers: Record<string, string> = {
      ...options.headers,
      host: this.caller.host,
      'x-request-id': this.caller.requestId,
      // The deploy history says which client made each deploy (src/files/deploy-client.ts).
      'user-agent': USER_AGENT,
    };
    if (this.caller.key !== undefined) headers['x-api-key'] = this.caller.key;
    propagation.inject(context.active(), headers);
    let payload: string | Buffer | undefined;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(options.json);
    } else if (options.bytes !== undefined) {
      // A multipart body names its own type (with its boundary).
      headers['content-type'] ??= 'application/octet-stream';
      payload = options.bytes;
    }
    const query: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) query[name] = String(value);
    const res = await inject(keepInjectedResponse(this.listener()), {
      method,
      url: path,
      query,
      headers,
      payload,
      remoteAddress: this.caller.remoteAddress,
    });
    let body: unknown;
    try {
      body = res.payload === '' ? {} : JSON.parse(res.payload);
    } catch {
      body = { error: res.statusMessage, message: res.payload.slice(0, 500) };
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return body as T;
    const retryAfter = res.headers['retry-after'];
    throw new ApiError(
      res.statusCode,
      typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : { error: String(body) },
      typeof retryAfter === 'string' ? retryAfter : undefined,
    );
  }
}
