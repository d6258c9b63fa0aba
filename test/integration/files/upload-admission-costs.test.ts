import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invitedOwner } from '../../support/account-api.js';
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
 * What an upload reserves of the byte budget must follow what its body will cost once read
 * (src/http/upload-admission.ts, src/files/upload-admission.ts), and the share it is counted in must
 * not be one the client picks at will.
 */

const MiB = 1024 * 1024;
const gauge = async (hp: TestHostplane, name: string) => metricValue(await scrapeMetrics(hp), name);

describe('upload admission: what a body costs, and whose share it is (pglite+fs)', () => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', {
      env: {
        HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '24',
        HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '12',
        HOSTPLANE_BODY_TIMEOUT_SECONDS: '120',
      },
    });
    site = await hp.createSite('costs-a');
  });
  afterAll(() => hp?.stop());

  const held = async (
    what: string,
    body: Buffer | string,
    headers: Record<string, string>,
    path = '/api/v1/files/upload',
  ) => {
    const t = slowRequest(hp.port, { path, headers, body, sendFirst: 20, everyMs: 500 });
    await eventually(what, async () => (await gauge(hp, 'hostplane_uploads_in_flight')) >= 1);
    return t;
  };
  const drained = () =>
    eventually('budget back to 0', async () => (await gauge(hp, 'hostplane_uploads_in_flight_bytes')) === 0);

  it('a gzip body reserves what it inflates to (the parser’s worst case), not its compressed length', async () => {
    // 9 MiB of JSON that gzip turns into a few KiB: express.json inflates it and holds it several times.
    const body = gzipSync(JSON.stringify({ path: 'big.txt', content: 'x'.repeat(9 * MiB) }));
    expect(body.length).toBeLessThan(64 * 1024);
    const t = await held('the gzip upload admitted', body, {
      ...apiKeyHeader(site),
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    try {
      expect(await gauge(hp, 'hostplane_uploads_in_flight_bytes')).toBe(12 * MiB);
    } finally {
      t.close();
    }
    await drained();
  });

  it('a large body the direct reader does not take (curl -d’s form type) costs what express.json holds', async () => {
    const body = JSON.stringify({ path: 'form.txt', content: 'x'.repeat(2 * MiB) });
    const t = await held('the form-typed upload admitted', body, {
      ...apiKeyHeader(site),
      'content-type': 'application/x-www-form-urlencoded',
    });
    try {
      // Five times its length (chunks, concatenation, string, parsed content, decoded bytes).
      expect(await gauge(hp, 'hostplane_uploads_in_flight_bytes')).toBe(5 * body.length);
    } finally {
      t.close();
    }
    await drained();
  });

  it('a session cannot take a share per made-up site_id: its uploads count in its account’s share', async () => {
    const owner = await invitedOwner(hp, 'costs-owner@example.com');
    const body = JSON.stringify({ path: 'a.txt', content: 'x'.repeat(5 * MiB) }); // costs 10 MiB
    const headers = { ...owner.bearer, 'content-type': 'application/json' };
    const first = await held(
      'the first session upload admitted',
      body,
      headers,
      '/api/v1/files/upload?site_id=900001',
    );
    try {
      // Another made-up site id: the same account, so the same share (10 + 10 > 12 MiB): 429.
      const second = slowRequest(hp.port, {
        path: '/api/v1/files/upload?site_id=900002',
        headers,
        body,
        sendFirst: 20,
        everyMs: 500,
      });
      try {
        // Refused before its body is read; admitted, it would wait for its body (status 0 here).
        const answer = await Promise.race([
          second.answer,
          new Promise<{ status: number }>((resolve) => setTimeout(() => resolve({ status: 0 }), 5000)),
        ]);
        expect(answer.status).toBe(429);
      } finally {
        second.close();
      }
    } finally {
      first.close();
    }
    await drained();
  });
});
