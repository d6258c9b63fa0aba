import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import {
  apiKeyHeader,
  metricValue,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { slowRequest } from '../../support/slow-client.js';

/*
 * Admission of uploads by bytes (src/http/upload-admission.ts) on a server with the default budget
 * (128 MiB, a quarter of it per site): many small uploads run side by side, one site's large
 * uploads leave room for the others, and every reservation comes back when its request ends.
 */

const MiB = 1024 * 1024;
const gauge = async (hp: TestHostplane, name: string) => metricValue(await scrapeMetrics(hp), name);

describe('upload admission by bytes, default budget (pglite+fs)', () => {
  let hp: TestHostplane;
  let sites: TestSite[];
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', {
      env: {
        HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: undefined,
        HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: undefined,
        HOSTPLANE_BODY_TIMEOUT_SECONDS: '120',
      },
    });
    sites = await Promise.all(['budget-a', 'budget-b', 'budget-c'].map((slug) => hp.createSite(slug)));
  });
  afterAll(() => hp?.stop());

  const upload = (site: TestSite, path: string, content: string) =>
    hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: apiKeyHeader(site),
      json: { path, content },
    });

  it('eight small uploads to one site sent at once: none refused', async () => {
    const [a] = sites as [TestSite];
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => upload(a, `small-${i}.html`, `<p>${i}</p>`.repeat(100))),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
  });

  it('two sites’ bursts of large uploads: each site holds its share, a third site gets in, and the budget returns to 0 once they hang up', async () => {
    const [a, b, c] = sites as [TestSite, TestSite, TestSite];
    // 7 MiB of JSON costs twice that (the direct reader's buffer, then the decoded bytes): two fit
    // a site's 32 MiB share, a third does not.
    const body = (i: number) => JSON.stringify({ path: `large-${i}.txt`, content: 'x'.repeat(7 * MiB) });
    const burst = [a, a, a, a, a, a, b, b, b, b, b, b].map((site, i) =>
      slowRequest(hp.port, {
        path: '/api/v1/files/upload',
        headers: { ...apiKeyHeader(site), 'content-type': 'application/json' },
        body: body(i),
        sendFirst: 20,
        everyMs: 500,
      }),
    );
    try {
      const refused: number[] = [];
      burst.forEach((t, i) => void t.answer.then((answer) => answer.status === 429 && refused.push(i)));
      await eventually('all but two uploads of each site refused', () => refused.length === 8);
      // Site b is not starved by site a: each holds two uploads.
      const bySite = (slug: string) =>
        refused.filter((i) => [a, a, a, a, a, a, b, b, b, b, b, b][i]!.slug === slug);
      expect(bySite('budget-a')).toHaveLength(4);
      expect(bySite('budget-b')).toHaveLength(4);
      const refusal = await burst[refused[0]!]!.answer;
      expect(Number(refusal.headers['retry-after'])).toBeGreaterThan(0);
      expect(JSON.parse(refusal.body)).toMatchObject({
        error: 'Too Many Requests',
        message: expect.stringMatching(
          /^This site's uploads in flight already hold 28 MB of at most 32 MB at a time; wait for one to finish\.$/,
        ),
        retry_after: expect.any(Number),
      });
      expect(await gauge(hp, 'hostplane_uploads_in_flight')).toBe(4);
      expect(await gauge(hp, 'hostplane_uploads_in_flight_bytes')).toBeGreaterThanOrEqual(4 * 14 * MiB);

      // A third site's uploads go through meanwhile, several at once.
      const others = await Promise.all([1, 2, 3].map((i) => upload(c, `c-${i}.txt`, 'c'.repeat(100_000))));
      expect(others.map((r) => r.status)).toEqual([200, 200, 200]);
    } finally {
      burst.forEach((t) => t.close());
    }
    // Hanging up mid-body gives every byte back.
    await eventually(
      'budget back to 0',
      async () => (await gauge(hp, 'hostplane_uploads_in_flight_bytes')) === 0,
    );
    expect(await gauge(hp, 'hostplane_uploads_in_flight')).toBe(0);
    expect((await upload(a, 'after.txt', 'after')).status).toBe(200);
  });
});

describe('upload admission by bytes, a small budget (pglite+fs)', () => {
  let hp: TestHostplane;
  let sites: TestSite[];
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', {
      env: {
        HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '24',
        HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '12',
        HOSTPLANE_BODY_TIMEOUT_SECONDS: '120',
      },
    });
    sites = await Promise.all(['small-a', 'small-b', 'small-c'].map((slug) => hp.createSite(slug)));
  });
  afterAll(() => hp?.stop());

  const trickle = (site: TestSite, path: string, size: number, chunked = false) =>
    slowRequest(hp.port, {
      path: '/api/v1/files/upload',
      headers: { ...apiKeyHeader(site), 'content-type': 'application/json' },
      body: JSON.stringify({ path, content: 'x'.repeat(size) }),
      sendFirst: 20,
      everyMs: 500,
      chunked,
    });

  it('a chunked body (no length) reserves the route’s largest cost, at most the site’s share', async () => {
    const [a] = sites as [TestSite];
    const chunked = trickle(a, 'chunked.txt', 1000, true);
    try {
      await eventually(
        'the chunked upload admitted',
        async () => (await gauge(hp, 'hostplane_uploads_in_flight')) === 1,
      );
      expect(await gauge(hp, 'hostplane_uploads_in_flight_bytes')).toBe(12 * MiB);
      const next = await hp.request('/api/v1/files/upload', {
        method: 'POST',
        headers: apiKeyHeader(a),
        json: { path: 'next.txt', content: 'next' },
      });
      expect(next.status).toBe(429);
    } finally {
      chunked.close();
    }
    await eventually(
      'budget back to 0',
      async () => (await gauge(hp, 'hostplane_uploads_in_flight_bytes')) === 0,
    );
  });

  it('a body larger than what is left of the budget is refused 503 with Retry-After, and admitted once bytes come back', async () => {
    const [a, b, c] = sites as [TestSite, TestSite, TestSite];
    // 5 MiB of JSON costs 10 MiB: one per site fits its 12 MiB share, two fill 20 of the 24 MiB.
    const held = [trickle(a, 'a.txt', 5 * MiB), trickle(b, 'b.txt', 5 * MiB)];
    try {
      await eventually(
        'two uploads admitted',
        async () => (await gauge(hp, 'hostplane_uploads_in_flight')) === 2,
      );
      // Site c asks for 10 MiB of the 4 left: 503, nothing read.
      const refused = await hp.request('/api/v1/files/upload', {
        method: 'POST',
        headers: { ...apiKeyHeader(c), 'content-type': 'application/json' },
        body: JSON.stringify({ path: 'c.txt', content: 'x'.repeat(5 * MiB) }),
      });
      expect(refused.status).toBe(503);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({
        error: 'Service Unavailable',
        message: expect.stringMatching(
          /^This server is receiving 20 MB of uploads already; try again in a moment\.$/,
        ),
        retry_after: expect.any(Number),
      });
      // What fits in the rest still goes in.
      const small = await hp.request('/api/v1/files/upload', {
        method: 'POST',
        headers: apiKeyHeader(c),
        json: { path: 'small.txt', content: 'small' },
      });
      expect(small.status).toBe(200);
    } finally {
      held.forEach((t) => t.close());
    }
    await eventually(
      'budget back to 0',
      async () => (await gauge(hp, 'hostplane_uploads_in_flight_bytes')) === 0,
    );
    const admitted = await hp.request('/api/v1/files/upload', {
      method: 'POST',
      headers: { ...apiKeyHeader(c), 'content-type': 'application/json' },
      body: JSON.stringify({ path: 'c.txt', content: 'x'.repeat(5 * MiB) }),
    });
    expect(admitted.status).toBe(200);
  });
});
