import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import {
  apiKeyHeader,
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

type Json = Record<string, unknown>;

const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Every `route` label value in a metrics scrape. */
const routeLabels = (text: string) => new Set([...text.matchAll(/\broute="([^"]*)"/g)].map((m) => m[1]));

/** Resolves a local JSON pointer (`#/a/b`) against a document; undefined when it leads nowhere. */
function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = (node as Json)[key];
  }
  return node;
}

/** Every `$ref` string anywhere in a JSON value. */
function refsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => refsIn(v, found));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') found.push(v);
      else refsIn(v, found);
    }
  }
  return found;
}

/** A writable stream that keeps what a pino logger writes. */
function memoryStream() {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { stream, text: () => text };
}

async function until(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

describe.each(backends)('operational endpoints (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;

  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('ops');
    await upload(hp, site, 'index.html', '<h1>ops</h1>');
  });
  afterAll(() => hp?.stop());

  /**
   * How much `action` moves each sample (name + exact label set). The registry is process-wide and
   * keeps the other back-end's samples, so only a before/after difference says what this server did.
   */
  async function deltas(
    samples: Array<[name: string, labels: Record<string, string>]>,
    action: () => Promise<unknown>,
  ): Promise<number[]> {
    const before = await scrapeMetrics(hp);
    await action();
    const after = await scrapeMetrics(hp);
    return samples.map(
      ([name, labels]) => metricValue(after, name, labels) - metricValue(before, name, labels),
    );
  }

  describe('health', () => {
    it('answers /healthz with 200', async () => {
      const res = await hp.request('/healthz');
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    });

    it('answers /readyz with 200 when the database and blob store are reachable', async () => {
      const res = await hp.request('/readyz');
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    });
  });

  describe('site hosts', () => {
    it('never expose /metrics, health or the API: the edge answers them as site paths', async () => {
      for (const path of ['/metrics', '/readyz', '/api/v1/openapi.json']) {
        const res = await hp.request(path, { host: 'ops.localhost:8080' });
        expect(res.status, path).toBe(404);
        expect(res.headers.get('content-type'), path).toMatch(/^text\/html/);
        expect(await res.text(), path).not.toContain('hostplane_http_requests_total');
      }
    });

    it('still serve /healthz on hosts that are not sites (pod IP, API host); /metrics never on the public port', async () => {
      for (const host of ['127.0.0.1:8080', 'localhost:8080']) {
        expect((await hp.request('/healthz', { host })).status, host).toBe(200);
        const metrics = await hp.request('/metrics', { host });
        expect(metrics.status, host).toBe(404);
        expect(await metrics.text(), host).not.toContain('hostplane_http_requests_total');
      }
    });
  });

  describe('/metrics', () => {
    const requestLabels = (route: string, status: string, method = 'GET') => ({
      role: 'all',
      method,
      route,
      status,
    });

    it('serves the Prometheus text format on its own port, with the build info', async () => {
      expect(new URL(hp.metricsUrl).port).not.toBe(String(hp.port));
      const res = await fetch(`${hp.metricsUrl}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await res.text()).toMatch(/^hostplane_build_info\{version="\d+\.\d+\.\d+[^"]*"\} 1$/m);
      expect((await fetch(`${hp.metricsUrl}/api/v1/files/list`)).status).toBe(404);
    });

    it('counts requests by route pattern and status, one per request', async () => {
      const labels = requestLabels('/api/v1/files/list', '200');
      const before = metricValue(await scrapeMetrics(hp), 'hostplane_http_requests_total', labels);
      for (let i = 0; i < 3; i++) {
        const res = await hp.request(`/api/v1/files/list?page=1&per_page=${i + 1}`, {
          headers: apiKeyHeader(site),
        });
        expect(res.status).toBe(200);
      }
      const after = metricValue(await scrapeMetrics(hp), 'hostplane_http_requests_total', labels);
      expect(after - before).toBe(3);
    });

    it('labels refused requests with their route pattern and status', async () => {
      const [refused] = await deltas(
        [['hostplane_http_requests_total', requestLabels('/api/v1/files/list', '401')]],
        async () => expect((await hp.request('/api/v1/files/list?page=2')).status).toBe(401),
      );
      expect(refused).toBe(1);
    });

    it('never uses a raw URL, query string or id as a route label', async () => {
      const publish = await hp.request('/ai/publish', {
        method: 'POST',
        json: { html: '<!doctype html><p>metrics</p>' },
      });
      const { url } = (await publish.json()) as { url: string };
      const id = url.split('/').pop() ?? '';
      expect((await hp.request(new URL(url).pathname)).status).toBe(200);
      const junk = `no-such-route-${randomBytes(6).toString('hex')}`;
      await hp.request(`/api/v1/${junk}?secret=1`);
      const text = await scrapeMetrics(hp);
      const routes = routeLabels(text);
      expect(routes).toContain('/demo/view/:id');
      expect(routes).toContain('unmatched');
      for (const route of routes) expect(route).not.toMatch(/[?&=]/);
      expect(text).not.toContain(id);
      expect(text).not.toContain(junk);
    });

    it('labels site requests with the edge route, not their paths', async () => {
      const unique = `/page-${randomBytes(6).toString('hex')}.html`;
      const [found, missing] = await deltas(
        [
          ['hostplane_http_requests_total', requestLabels('edge', '200')],
          ['hostplane_http_requests_total', requestLabels('edge', '404')],
        ],
        async () => {
          expect((await hp.request(unique, { host: 'ops.localhost:8080' })).status).toBe(404);
          expect((await hp.request('/', { host: 'ops.localhost:8080' })).status).toBe(200);
        },
      );
      expect(found).toBe(1);
      expect(missing).toBe(1);
      expect(await scrapeMetrics(hp)).not.toContain(unique);
    });

    it('has a request duration histogram by route', async () => {
      const labels = requestLabels('/api/v1/hosting-info', '200');
      const [inf, count] = await deltas(
        [
          ['hostplane_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }],
          ['hostplane_http_request_duration_seconds_count', labels],
        ],
        async () =>
          expect((await hp.request('/api/v1/hosting-info', { headers: apiKeyHeader(site) })).status).toBe(
            200,
          ),
      );
      expect(inf).toBe(1);
      expect(count).toBe(1);
    });

    it('reports blob store latency by operation', async () => {
      const store = backend === 'postgres+s3' ? 's3' : 'fs';
      const [puts] = await deltas(
        [['hostplane_blob_operation_duration_seconds_count', { store, operation: 'put', outcome: 'ok' }]],
        () => upload(hp, site, 'metrics/blob.txt', `blob ${randomBytes(8).toString('hex')}`),
      );
      expect(puts).toBe(1);
    });

    it('reports database latency by operation', async () => {
      const [auths] = await deltas(
        [['hostplane_db_operation_duration_seconds_count', { operation: 'authenticate_key', outcome: 'ok' }]],
        async () =>
          expect((await hp.request('/api/v1/files/list', { headers: apiKeyHeader(site) })).status).toBe(200),
      );
      expect(auths).toBe(1);
      expect(await scrapeMetrics(hp)).toMatch(/^hostplane_db_operation_duration_seconds_bucket\{/m);
    });

    it('includes the Node.js default metrics', async () => {
      const text = await scrapeMetrics(hp);
      expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
      expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
      expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    });
  });

  describe('GET /api/v1/openapi.json', () => {
    let doc: Json;
    let paths: Record<string, Record<string, Json>>;
    beforeAll(async () => {
      const res = await hp.request('/api/v1/openapi.json');
      expect(res.status).toBe(200);
      doc = (await res.json()) as Json;
      paths = doc.paths as typeof paths;
    });

    it('is an OpenAPI 3.1 document', () => {
      expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    });

    it('describes interface version 1.0.0', () => {
      expect((doc.info as Json).version).toBe('1.0.0');
    });

    const inScope: Array<[string, string]> = [
      ['get', '/api/v1/files/list'],
      ['get', '/api/v1/files/get'],
      ['post', '/api/v1/files/upload'],
      ['post', '/api/v1/files/rename'],
      ['delete', '/api/v1/files/delete'],
      ['post', '/api/v1/files/create-folder'],
      ['post', '/api/v1/files/rename-folder'],
      ['delete', '/api/v1/files/delete-folder'],
      ['get', '/api/v1/files/storage-limits'],
      ['get', '/api/v1/hosting-info'],
      ['post', '/api/v1/videos/upload'],
      ['post', '/api/keys/generate-temp'],
      ['post', '/ai/publish'],
      ['post', '/demo/api/publish'],
    ];
    it.each(inScope)('documents %s %s', (method, path) => {
      expect(paths[path]?.[method]).toBeDefined();
    });

    it('documents 408 on every operation that reads a body (the body deadline)', () => {
      const withBody = Object.entries(paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op.requestBody !== undefined)
          .map(([method, op]) => [`${method} ${path}`, op.responses as Json] as const),
      );
      expect(withBody.length).toBeGreaterThan(20);
      for (const [name, responses] of withBody) expect(responses['408'], name).toBeDefined();
    });

    it('documents per_page from its zod schema: an integer of at most 100', () => {
      const parameters = paths['/api/v1/files/list']?.get?.parameters as Array<{
        name: string;
        schema: Json;
      }>;
      const perPage = parameters.find((p) => p.name === 'per_page');
      expect(perPage?.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 100 });
    });

    it('documents site_id as an optional positive integer', () => {
      const parameters = paths['/api/v1/files/list']?.get?.parameters as Array<{
        name: string;
        required: boolean;
        schema: Json;
      }>;
      const siteId = parameters.find((p) => p.name === 'site_id');
      expect(siteId?.required).toBe(false);
      expect(siteId?.schema).toMatchObject({ type: 'integer', minimum: 1 });
    });

    it('documents expires_in of generate-temp with its zod bounds', () => {
      const body = paths['/api/keys/generate-temp']?.post?.requestBody as Json;
      const schema = (body.content as Record<string, { schema: Json }>)['application/json']?.schema;
      const expiresIn = (schema?.properties as Record<string, Json>).expires_in;
      expect(expiresIn).toMatchObject({ type: 'integer', maximum: 86400, default: 3600 });
    });

    it('documents html as a required string of /ai/publish', () => {
      const body = paths['/ai/publish']?.post?.requestBody as Json;
      const schema = (body.content as Record<string, { schema: Json }>)['application/json']?.schema;
      expect(schema?.required).toContain('html');
      expect((schema?.properties as Record<string, Json>).html).toMatchObject({ type: 'string' });
    });

    it('declares the API key on files endpoints and the session on generate-temp', () => {
      expect(paths['/api/v1/files/upload']?.post?.security).toContainEqual({ ApiKey: [] });
      expect(paths['/api/keys/generate-temp']?.post?.security).toEqual([{ Session: [] }]);
      expect(paths['/ai/publish']?.post?.security).toEqual([]);
    });

    it('documents a 503 on every operation (a database or blob store away)', () => {
      const operations = Object.entries(paths).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => ({ name: `${method} ${path}`, op })),
      );
      expect(operations.length).toBeGreaterThan(20);
      for (const { name, op } of operations) expect((op.responses as Json)['503'], name).toBeDefined();
      const list = (paths['/api/v1/files/list']?.get?.responses as Record<string, Json>)['503'];
      expect(list?.headers).toHaveProperty('Retry-After');
      expect(JSON.stringify(list)).toContain('DEPENDENCY_UNAVAILABLE_error');
    });

    it('has only $refs that resolve inside the document', () => {
      const refs = refsIn(doc);
      expect(refs.length).toBeGreaterThan(0);
      for (const ref of new Set(refs)) expect(resolvePointer(doc, ref), ref).toBeDefined();
    });
  });

  describe('errors and request ids', () => {
    it('answers a corrupt gzip body with 400 {error, message}, not 500', async () => {
      for (const path of ['/api/v1/files/upload', '/api/v1/files/create-folder']) {
        const res = await hp.request(path, {
          method: 'POST',
          headers: { ...apiKeyHeader(site), 'content-type': 'application/json', 'content-encoding': 'gzip' },
          body: 'definitely not gzip',
        });
        expect(res.status, path).toBe(400);
        expect(Object.keys(await res.json()).sort(), path).toEqual(['error', 'message']);
      }
    });

    it('answers an unknown API route with 404 {error, message}', async () => {
      const res = await hp.request('/api/v1/does-not-exist');
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = await res.json();
      expect(Object.keys(body).sort()).toEqual(['error', 'message']);
    });

    it('echoes a sane X-Request-Id', async () => {
      const res = await hp.request('/healthz', { headers: { 'x-request-id': 'client-req.42_A' } });
      expect(res.headers.get('x-request-id')).toBe('client-req.42_A');
    });

    it('generates an X-Request-Id when none is sent, different for each request', async () => {
      const a = (await hp.request('/healthz')).headers.get('x-request-id') ?? '';
      const b = (await hp.request('/healthz')).headers.get('x-request-id') ?? '';
      expect(a).toMatch(SAFE_REQUEST_ID);
      expect(b).toMatch(SAFE_REQUEST_ID);
      expect(a).not.toBe(b);
    });

    it('replaces an unsafe X-Request-Id with a generated one', async () => {
      for (const unsafe of ['has spaces in it', 'x'.repeat(300), '<script>']) {
        const id = (await hp.request('/healthz', { headers: { 'x-request-id': unsafe } })).headers.get(
          'x-request-id',
        );
        expect(id).not.toBe(unsafe);
        expect(id).toMatch(SAFE_REQUEST_ID);
      }
    });

    it('sends X-Request-Id on site responses too', async () => {
      const res = await hp.request('/', {
        host: 'ops.localhost:8080',
        headers: { 'x-request-id': 'site-req-1' },
      });
      expect(res.headers.get('x-request-id')).toBe('site-req-1');
    });
  });

  describe('structured logs', () => {
    let logged: TestHostplane;
    let logs: ReturnType<typeof memoryStream>;
    let logSite: TestSite;
    const lines = () =>
      logs
        .text()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json);
    const lineFor = (requestId: string) =>
      lines().find((l) => (l.req as Json | undefined)?.id === requestId && l.res !== undefined);

    beforeAll(async () => {
      logs = memoryStream();
      logged = await startHostplane(backend, { logger: createLogger('info', logs.stream) });
      logSite = await logged.createSite('logs');
    });
    afterAll(() => logged?.stop());

    it('writes one JSON line per request with its request id, method, route and status', async () => {
      await logged.request('/api/v1/files/list?page=1', {
        headers: { ...apiKeyHeader(logSite), 'x-request-id': 'log-line-1' },
      });
      await until(() => lineFor('log-line-1') !== undefined);
      const line = lineFor('log-line-1');
      expect(line).toBeDefined();
      expect(line?.req).toMatchObject({ id: 'log-line-1', method: 'GET' });
      expect(line?.res).toMatchObject({ statusCode: 200 });
    });

    it('never logs an API key, session token or minted key', async () => {
      const session = await logged.services.platform.createSession(logSite.email);
      const wrongKey = `hp_live_${randomBytes(24).toString('base64url')}`;
      await logged.request('/api/v1/files/list', {
        headers: { ...apiKeyHeader(logSite), 'x-request-id': 'secret-1' },
      });
      await logged.request('/api/v1/files/list', {
        headers: { 'x-api-key': wrongKey, 'x-request-id': 'secret-2' },
      });
      const minted = await logged.request('/api/keys/generate-temp', {
        method: 'POST',
        json: {},
        headers: {
          authorization: `Bearer ${session.token}`,
          'x-api-key': logSite.apiKey,
          'x-request-id': 'secret-3',
        },
      });
      const { temp_api_key: tempKey } = (await minted.json()) as { temp_api_key: string };
      await logged.request('/api/v1/hosting-info', {
        headers: { 'x-api-key': tempKey, 'x-request-id': 'secret-4' },
      });
      await until(() => ['secret-1', 'secret-2', 'secret-3', 'secret-4'].every((id) => lineFor(id)));
      for (const id of ['secret-1', 'secret-2', 'secret-3', 'secret-4'])
        expect(lineFor(id), id).toBeDefined();
      const text = logs.text();
      for (const secret of [logSite.apiKey, wrongKey, session.token, tempKey]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice(-16));
      }
    });

    it('redacts apiKey, token and password fields in application log calls', async () => {
      logged.services.logger.info(
        {
          apiKey: 'AK-should-not-appear',
          token: 'TK-should-not-appear',
          user: { password: 'PW-should-not-appear' },
        },
        'redaction check',
      );
      await until(() => logs.text().includes('redaction check'));
      const text = logs.text();
      expect(text).toContain('redaction check');
      for (const secret of ['AK-should-not-appear', 'TK-should-not-appear', 'PW-should-not-appear']) {
        expect(text).not.toContain(secret);
      }
    });
  });
});
