import type { KubeConfig } from '@kubernetes/client-node';
import http from 'node:http';
import https from 'node:https';

/**
 * The informer's plumbing: a plain GET against the API server (list pages come back as the
 * server's JSON, timestamps as strings, unlike client-node's typed clients) and its back-off.
 */

/** A list page that takes longer than this is abandoned (and retried with back-off). */
const LIST_REQUEST_TIMEOUT_MS = 60_000;
const BACKOFF_INITIAL_MS = 200;
const BACKOFF_MAX_MS = 30_000;

/** A non-2xx answer of the API server, or a watch `ERROR` event carrying a Status. */
export class KubeApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

/** "410 Gone": the resource version asked for is older than the server keeps (or a continue token expired). */
export function isExpired(err: unknown): boolean {
  return (
    typeof err === 'object' &&
    err !== null &&
    ((err as { statusCode?: unknown }).statusCode === 410 || (err as { code?: unknown }).code === 410)
  );
}

export interface ObjectList<T> {
  kind?: string;
  apiVersion?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

export interface StatusObject {
  code?: number;
  message?: string;
  reason?: string;
}

/** Exponential back-off with jitter, so that many clients reconnecting after an outage spread out. */
export class Backoff {
  private nextMs = BACKOFF_INITIAL_MS;

  next(): number {
    const base = this.nextMs;
    this.nextMs = Math.min(this.nextMs * 2, BACKOFF_MAX_MS);
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  reset(): void {
    this.nextMs = BACKOFF_INITIAL_MS;
  }
}

/** GETs `pathAndQuery` as JSON; rejects with KubeApiError on a non-2xx answer. */
export async function getJson(
  kubeConfig: KubeConfig,
  pathAndQuery: string,
  signal: AbortSignal,
): Promise<unknown> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(server + pathAndQuery);
  const options: https.RequestOptions = {
    method: 'GET',
    headers: { accept: 'application/json' },
    signal,
  };
  await kubeConfig.applyToHTTPSOptions(options);
  const transport = url.protocol === 'http:' ? http : https;
  return new Promise((resolve, reject) => {
    const request = transport.request(url, options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const status = response.statusCode ?? 0;
        if (status < 200 || status > 299) {
          reject(new KubeApiError(status, `GET ${url.pathname}: HTTP ${status}: ${statusMessage(body)}`));
          return;
        }
        try {
          resolve(JSON.parse(body));
        } catch (err) {
          reject(err);
        }
      });
    });
    request.setTimeout(LIST_REQUEST_TIMEOUT_MS, () =>
      request.destroy(new Error(`GET ${url.pathname} timed out after ${LIST_REQUEST_TIMEOUT_MS} ms`)),
    );
    request.on('error', reject);
    request.end();
  });
}

/** The `message` of a Status body, or the start of whatever else the server sent. */
function statusMessage(body: string): string {
  try {
    const status = JSON.parse(body) as StatusObject;
    if (typeof status.message === 'string') return status.message;
  } catch {
    // not JSON: fall through
  }
  return body.slice(0, 200);
}
