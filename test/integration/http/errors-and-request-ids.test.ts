import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiKeyHeader,
  backends,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

describe.each(backends)('operational endpoints (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;

  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('ops');
    await upload(hp, site, 'index.html', '<h1>ops</h1>');
  });
  afterAll(() => hp?.stop());

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
});
