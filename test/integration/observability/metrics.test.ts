import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

/** Every `route` label value in a metrics scrape. */
const routeLabels = (text: string) => new Set([...text.matchAll(/\broute="([^"]*)"/g)].map((m) => m[1]));

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
});
