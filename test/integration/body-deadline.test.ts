import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formsApi } from '../support/forms-api.js';
import {
  apiKeyHeader,
  backends,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../support/hostplane.js';
import { slowRequest } from '../support/slow-client.js';
import { sqliteApi } from '../support/sqlite-api.js';

/**
 * Every body reader, not only uploads, is held to the body deadline (src/http/body-deadline.ts):
 * express.json, urlencoded form posts, the publish endpoints (in their own error shape) and the
 * SQLite fast path's own reader. And a request's head has its own deadline (Node's headersTimeout).
 */
describe.each(backends)('request body and header deadlines (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    hp = await startHostplane(backend, {
      env: {
        HOSTPLANE_BODY_TIMEOUT_SECONDS: '1',
        HOSTPLANE_BODY_MIN_RATE: '1024',
        HOSTPLANE_HEADERS_TIMEOUT_SECONDS: '1',
      },
    });
    site = await hp.createSite('deadlines');
  });
  afterAll(() => hp?.stop());

  /** A JSON body of about 2 KB, trickled at 10 bytes a second after its first 10 bytes. */
  const trickle = (path: string, headers: Record<string, string>, body: string) =>
    slowRequest(hp.port, { path, headers, body, sendFirst: 10, everyMs: 100 }).answer;
  const padded = (value: Record<string, unknown>) => JSON.stringify({ ...value, pad: 'x'.repeat(2000) });

  it('answers a slow JSON body 408 on an Express route', async () => {
    const answer = await trickle(
      '/api/v1/files/create-folder',
      { ...apiKeyHeader(site), 'content-type': 'application/json' },
      padded({ path: 'slow-folder' }),
    );
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toEqual({
      error: 'Request Timeout',
      message: 'The request body arrived slower than 1024 bytes a second over 1 s.',
    });
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(1000);
  });

  it('answers a slow form post (urlencoded) 408', async () => {
    const form = await formsApi(hp, site).createOk();
    const answer = await trickle(
      `/f/${String(form.uuid)}`,
      { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '203.0.113.7' },
      `name=Ada&email=ada%40example.com&message=${'x'.repeat(2000)}`,
    );
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'Request Timeout' });
  });

  it('answers a slow publish body 408 in the publish endpoint’s own shape', async () => {
    const ai = await trickle(
      '/ai/publish',
      { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.8' },
      padded({ html: '<h1>hi</h1>' }),
    );
    expect(ai.status).toBe(408);
    expect(JSON.parse(ai.body)).toEqual({
      success: false,
      error: 'The request body arrived slower than 1024 bytes a second over 1 s.',
    });
    const demo = await trickle(
      '/demo/api/publish',
      { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.9' },
      padded({ html_content: '<h1>hi</h1>' }),
    );
    expect(demo.status).toBe(408);
    expect(JSON.parse(demo.body)).toMatchObject({ success: false, error: 'Request timeout' });
  });

  it('answers a slow body on the SQLite fast path 408', async () => {
    const sqlite = sqliteApi(hp, site);
    const token = await sqlite.token();
    const answer = await trickle(
      '/api/v1/sqlite/query',
      { 'x-sqlite-token': token, origin: sqlite.origin, 'content-type': 'application/json' },
      padded({ sql: 'SELECT 1' }),
    );
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'Request Timeout' });
    expect(answer.headers['access-control-allow-origin']).toBe(sqlite.origin);
  });

  it('closes a connection whose headers trickle (slowloris) after the headers deadline', async () => {
    const socket = net.connect(hp.port, '127.0.0.1');
    const started = performance.now();
    socket.write('POST /api/v1/files/upload HTTP/1.1\r\nHost: localhost:8080\r\n');
    let n = 0;
    const timer = setInterval(() => socket.write(`X-Slow-${n++}: 1\r\n`, () => undefined), 200);
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    await new Promise<void>((resolve) => {
      socket.on('error', () => undefined);
      socket.on('close', () => resolve());
      // Bounded by the test's timeout: today's default (60 s, checked every 30 s) would hang here.
    });
    clearInterval(timer);
    expect(Buffer.concat(received).toString('latin1')).toMatch(/^HTTP\/1\.1 408 /);
    expect(performance.now() - started).toBeLessThan(4000);
  }, 10_000);
});
