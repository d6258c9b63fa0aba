import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiKeyHeader,
  backends,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

describe.each(backends)('upload then serve (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('smoke');
  });
  afterAll(() => hp?.stop());

  it('serves an uploaded page on the site host, and the next upload at once', async () => {
    await upload(hp, site, 'index.html', '<h1>one</h1>');
    let res = await hp.request('/', { host: 'smoke.localhost:8080' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('<h1>one</h1>');
    await upload(hp, site, 'index.html', '<h1>two</h1>');
    res = await hp.request('/', { host: 'smoke.localhost:8080' });
    expect(await res.text()).toBe('<h1>two</h1>');
  });

  it('refuses a request without a key with the spec 401 body', async () => {
    const res = await hp.request('/api/v1/files/list');
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(Object.keys(body).sort()).toEqual(['error', 'hint_for_ai', 'message']);
    expect(body.error).toBe('Unauthorized');
    const ok = await hp.request('/api/v1/files/list', { headers: apiKeyHeader(site) });
    expect(ok.status).toBe(200);
  });
});
