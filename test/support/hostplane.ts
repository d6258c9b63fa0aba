import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { FsBlobStore, InstrumentedBlobStore, S3BlobStore, type BlobStore } from '../../src/blob/index.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import type { PlanType } from '../../src/platform/plans.js';
import { startServer, type RunningServer, type StartOptions } from '../../src/server/index.js';
import { openStore, type Store } from '../../src/store/db.js';
import { createBucket } from './minio.js';
import { createDatabase } from './postgres.js';

/**
 * The two real back-end combinations every service test runs against:
 * PGlite + local folder (the embedded default) and PostgreSQL + MinIO (the cluster setup).
 */
export const backends = ['pglite+fs', 'postgres+s3'] as const;
export type Backend = (typeof backends)[number];

export interface TestHostplane extends RunningServer {
  backend: Backend;
  config: Config;
  dataDir: string;
  /**
   * `fetch` against the server; `host` sets the Host header (e.g. `demo.localhost`), `json` sends a
   * JSON body and `form` a multipart/form-data body (parts in the order they were appended).
   */
  request(
    pathAndQuery: string,
    init?: RequestInit & { host?: string; json?: unknown; form?: FormData },
  ): Promise<Response>;
  /** Creates an account + site + permanent key through the same code the admin CLI uses. */
  createSite(slug: string, options?: { email?: string; plan?: PlanType }): Promise<TestSite>;
  stop(): Promise<void>;
}

export interface TestSite {
  siteId: number;
  accountId: number;
  slug: string;
  apiKey: string;
  email: string;
}

let counter = 0;

export interface TestStartOptions extends StartOptions {
  /** Wraps the back-end's real blob store, e.g. to run a step between two of its calls. */
  wrapBlobs?: (blobs: BlobStore) => BlobStore;
  /** Wraps the server's view of its store, e.g. to hold back a NOTIFY channel's deliveries. */
  wrapStore?: (store: Store) => Store;
  /** Extra environment for the server's configuration (e.g. lower upload caps). */
  env?: NodeJS.ProcessEnv;
}

export async function startHostplane(
  backend: Backend,
  { wrapBlobs, wrapStore, env: extraEnv, ...options }: TestStartOptions = {},
): Promise<TestHostplane> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hostplane-test-'));
  const env: NodeJS.ProcessEnv = {
    PORT: '0',
    HOST: '127.0.0.1',
    HOSTPLANE_DATA_DIR: dataDir,
    HOSTPLANE_METRICS_PORT: '0',
    HOSTPLANE_SITES_DOMAIN: 'localhost',
    HOSTPLANE_TRUST_PROXY: 'loopback',
    LOG_LEVEL: 'silent',
    // Suites send bursts of concurrent uploads (e.g. 20 large ones at a quota limit); the upload
    // byte budget has its own tests.
    HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '4096',
    HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '4096',
    ...extraEnv,
  };
  let blobs: BlobStore;
  if (backend === 'postgres+s3') {
    // A given DATABASE_URL lets several servers share one control plane (e.g. two SQLite shards).
    env.DATABASE_URL = extraEnv?.DATABASE_URL ?? (await createDatabase(inject('postgresUrl')));
    const s3 = inject('s3');
    const bucket = await createBucket(s3);
    const store = new S3BlobStore({
      bucket,
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    blobs = new InstrumentedBlobStore(store);
  } else {
    blobs = new InstrumentedBlobStore(new FsBlobStore(path.join(dataDir, 'files')));
  }
  const store = await openStore({
    databaseUrl: env.DATABASE_URL,
    pgliteDir: backend === 'pglite+fs' ? path.join(dataDir, 'pglite') : undefined,
  });
  // Base URL is fixed before the port is known (unless a test chose both, as a browser needs);
  // tests read URLs relative to it.
  env.HOSTPLANE_BASE_URL = extraEnv?.HOSTPLANE_BASE_URL ?? 'http://localhost:8080';
  const config = loadConfig(env);
  const server = await startServer(config, {
    logger: createLogger('silent'),
    store: wrapStore ? wrapStore(store) : store,
    blobs: wrapBlobs ? wrapBlobs(blobs) : blobs,
    adminSocket: false,
    worker: false,
    ...options,
  });

  const request: TestHostplane['request'] = async (pathAndQuery, init = {}) => {
    const { host, json, form, ...rest } = init;
    const headers = new Headers(rest.headers);
    let body = rest.body as string | Buffer | undefined;
    if (json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(json);
    } else if (form !== undefined) {
      const encoded = multipartBody(form);
      headers.set('content-type', encoded.contentType);
      body = Buffer.from(await encoded.bytes());
    }
    return rawRequest(server.port, pathAndQuery, {
      method: rest.method ?? 'GET',
      headers: { ...Object.fromEntries(headers), host: host ?? headers.get('host') ?? 'localhost:8080' },
      body,
    });
  };

  return {
    ...server,
    backend,
    config,
    dataDir,
    request,
    async createSite(slug, opts = {}) {
      const email = opts.email ?? `owner-${++counter}-${slug}@example.com`;
      const created = await server.services.platform.createSite({ email, slug, plan: opts.plan ?? 'free' });
      return { ...created, email };
    },
    async stop() {
      await server.close();
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** FormData serialized the way fetch would send it: the bytes and their multipart content type. */
export function multipartBody(form: FormData): { contentType: string; bytes(): Promise<ArrayBuffer> } {
  const encoded = new Response(form);
  return {
    contentType: encoded.headers.get('content-type') ?? 'multipart/form-data',
    bytes: () => encoded.arrayBuffer(),
  };
}

export const apiKeyHeader = (site: TestSite) => ({ 'x-api-key': site.apiKey });

/** Uploads a text file through the public API and asserts it worked. */
export async function upload(
  hp: TestHostplane,
  site: TestSite,
  sitePath: string,
  content: string,
): Promise<void> {
  const res = await hp.request('/api/v1/files/upload', {
    method: 'POST',
    headers: apiKeyHeader(site),
    json: { path: sitePath, content },
  });
  if (res.status !== 200) throw new Error(`upload ${sitePath} → ${res.status} ${await res.text()}`);
}

/** Uploads bytes (base64) through the public API and asserts it worked. */
export async function uploadBinary(hp: TestHostplane, site: TestSite, sitePath: string, bytes: Buffer) {
  const res = await hp.request('/api/v1/files/upload', {
    method: 'POST',
    headers: apiKeyHeader(site),
    json: { path: sitePath, content: bytes.toString('base64'), encoding: 'base64' },
  });
  if (res.status !== 200) throw new Error(`upload ${sitePath} → ${res.status} ${await res.text()}`);
}

/** Uploads a text file through the public API of the server on `port` and asserts it worked. */
export async function uploadTo(port: number, site: TestSite, sitePath: string, content: string) {
  const res = await rawRequest(port, '/api/v1/files/upload', {
    method: 'POST',
    headers: { host: 'localhost:8080', 'content-type': 'application/json', ...apiKeyHeader(site) },
    body: JSON.stringify({ path: sitePath, content }),
  });
  if (res.status !== 200) throw new Error(`upload ${sitePath} → ${res.status} ${await res.text()}`);
}

/**
 * A JSON call through rawRequest (free Host header): the body sent as JSON when given (POST, unless
 * `method` says otherwise), the answer parsed as JSON (`{ text }` when it is not).
 */
export async function jsonRequest(
  port: number,
  pathAndQuery: string,
  init: { method?: string; host: string; headers?: Record<string, string>; json?: unknown; address?: string },
): Promise<{ res: Response; body: Record<string, unknown> }> {
  const { json } = init;
  const res = await rawRequest(port, pathAndQuery, {
    address: init.address,
    method: init.method ?? (json === undefined ? 'GET' : 'POST'),
    headers: {
      host: init.host,
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    body = { text };
  }
  return { res, body };
}

/**
 * An HTTP request with a free choice of Host header (fetch forbids setting it), answered as a
 * standard Response. Redirects are not followed.
 */
export function rawRequest(
  port: number,
  pathAndQuery: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer | Uint8Array;
    /** Where to connect (127.0.0.1 unless given). */
    address?: string;
  },
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: init.address ?? '127.0.0.1',
        port,
        path: pathAndQuery,
        method: init.method ?? 'GET',
        headers: init.headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (Array.isArray(value)) value.forEach((v) => headers.append(name, v));
            else if (value !== undefined) headers.set(name, value);
          }
          const status = res.statusCode ?? 0;
          const nullBody = status === 204 || status === 304 || init.method === 'HEAD';
          resolve(new Response(nullBody ? null : Buffer.concat(chunks), { status, headers }));
        });
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** GET /metrics (on the metrics port) as text. */
export async function scrapeMetrics(hp: TestHostplane): Promise<string> {
  const res = await fetch(`${hp.metricsUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics → ${res.status}`);
  return res.text();
}

/**
 * The value of one sample in Prometheus text format, found by name and its exact label set (in any
 * order); 0 when the sample is absent.
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = new Map(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (present.size === wanted.length && wanted.every(([k, v]) => present.get(k) === v))
      return Number(match[3]);
  }
  return 0;
}
