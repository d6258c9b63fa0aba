import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { formsApi } from '../../support/forms-api.js';
import {
  apiKeyHeader,
  backends,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { createDatabase } from '../../support/postgres.js';
import { slowRequest } from '../../support/slow-client.js';
import { sqliteApi } from '../../support/sqlite-api.js';

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
    const answered408 = () =>
      metricSum(hp, 'hostplane_http_requests_total', ['route="/api/v1/sqlite/query"', 'status="408"']);
    const before = await answered408();
    const answer = await trickle(
      '/api/v1/sqlite/query',
      { 'x-sqlite-token': token, origin: sqlite.origin, 'content-type': 'application/json' },
      padded({ sql: 'SELECT 1' }),
    );
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'Request Timeout' });
    expect(answer.headers['access-control-allow-origin']).toBe(sqlite.origin);
    // The fast path's reader learns the request is over and its handler ends (counted as answered).
    await eventually('the fast path’s handler settled', async () => (await answered408()) === before + 1);
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

describe('request body deadline through a SQLite proxy hop', () => {
  let databaseUrl: string;
  let a: TestHostplane;
  let b: TestHostplane;
  let site: TestSite;
  const shard = (name: string) =>
    startHostplane('postgres+s3', {
      env: {
        DATABASE_URL: databaseUrl,
        HOSTPLANE_SQLITE_SHARD_NAME: name,
        HOSTPLANE_BODY_TIMEOUT_SECONDS: '1',
        HOSTPLANE_BODY_MIN_RATE: '1024',
      },
    });
  beforeAll(async () => {
    databaseUrl = await createDatabase(inject('postgresUrl'));
    a = await shard('deadline-a');
    b = await shard('deadline-b');
    site = await a.createSite('hop-deadline');
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('answers a slow body sent to a replica that forwards it 408, and both replicas carry on', async () => {
    const viaA = sqliteApi(a, site);
    const viaB = sqliteApi(b, site);
    const token = await viaA.token({ path: 'hop.sqlite', name: 'hop', requireUserAuth: false });
    expect((await viaA.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 1' })).status).toBe(200);
    // The answers to queries of both replicas (they run in this process and share its registry):
    // the forwarding replica's own and the owner's end of the hop.
    const answered = (status: string) =>
      metricSum(a, 'hostplane_http_requests_total', ['route="/api/v1/sqlite/query"', `status="${status}`]);
    const [refusedBefore, failedBefore] = [await answered('4'), await answered('5')];
    // Through B, which does not own the database: B's fast path forwards it to A.
    const answer = await slowRequest(b.port, {
      path: '/api/v1/sqlite/query',
      headers: { 'x-sqlite-token': token, origin: viaB.origin, 'content-type': 'application/json' },
      body: JSON.stringify({ sql: 'SELECT 1', pad: 'x'.repeat(2000) }),
      sendFirst: 10,
      everyMs: 100,
    }).answer;
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'Request Timeout' });
    // The owner's end of the hop ends too (cut with the client, or by its own deadline), never as a 500 …
    await eventually(
      'the owner’s end of the hop over',
      async () => (await answered('4')) === refusedBefore + 2,
    );
    expect(await answered('5')).toBe(failedBefore);
    // … and neither replica is the worse for it.
    expect(
      (await viaB.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 2 AS x' })).body.rows,
    ).toEqual([{ x: 2 }]);
    expect((await viaA.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 3 AS x' })).status).toBe(
      200,
    );
  });
});

/** The body deadline at its default window (20 s: the watchdog's round is a second). */
describe('request bodies held by the body deadline', () => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    site = await hp.createSite('watched');
  });
  afterAll(() => hp?.stop());

  it('lets go of a request as soon as its body has arrived (no request held until the next check)', async () => {
    // Held until the watchdog's next round (up to a second at the default window), every request
    // with a body outlived the young generation under load: its objects were promoted and the old
    // space grew by megabytes a second (bench/sqlite, GC a quarter of the main thread).
    const watching = () => metricValue(hp, 'hostplane_http_bodies_watched');
    const sqlite = sqliteApi(hp, site);
    const token = await sqlite.token({
      path: 'data/watched.sqlite',
      name: 'watched',
      requireUserAuth: false,
    });
    const headers = { 'x-sqlite-token': token, origin: sqlite.origin };
    await eventually('nothing watched before', async () => (await watching()) === 0);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        sqlite.scoped(token, 'POST', '/api/v1/sqlite/query', { sql: 'SELECT 1 AS one' }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    // Read at once: the watchdog's own round (every second at the default window) would drop them
    // too, later; read three times in a row and expect none watched at any of them.
    const seen = [await watching(), await watching(), await watching()];
    expect(seen).toEqual([0, 0, 0]);
    // A body still arriving is watched (the gauge counts what the watchdog holds), until it ends.
    const slow = slowRequest(hp.port, {
      path: '/api/v1/sqlite/query',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ sql: 'SELECT 1 AS one', pad: 'x'.repeat(200) }),
      sendFirst: 10,
      everyMs: 100,
      chunkBytes: 20,
    });
    await eventually('the slow body watched', async () => (await watching()) === 1);
    expect((await slow.answer).status).toBe(200);
    expect([await watching(), await watching()]).toEqual([0, 0]);
  });
});

/** The sum of a metric's samples whose labels contain every one of `parts`. */
async function metricSum(hp: TestHostplane, name: string, parts: string[]): Promise<number> {
  const text = await (await fetch(`${hp.metricsUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && parts.every((part) => line.includes(part)))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

/** The value of a metric without labels. */
async function metricValue(hp: TestHostplane, name: string): Promise<number> {
  const text = await (await fetch(`${hp.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`${name} not in /metrics`);
  return Number(line.split(' ').pop());
}
