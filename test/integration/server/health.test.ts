import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backends,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

describe.each(backends)('operational endpoints (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;

  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('ops');
    await upload(hp, site, 'index.html', '<h1>ops</h1>');
  });
  afterAll(() => hp?.stop());

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
});
