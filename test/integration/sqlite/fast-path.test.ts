import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  metricValue,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';
import { sqliteApi, type SqliteApi } from '../../support/sqlite-api.js';

/**
 * The CRUD calls a process owns are served without Express (the routes declared `raw`, served by
 * src/http/raw-dispatch.ts); a gzip body still goes the Express way (its parser inflates it). Every
 * body rule answers alike on both paths — the same input sent plain and gzipped gets the same
 * answer — and the fast path keeps the API's request id, CORS and request metrics. A refused call
 * is answered on the fast path, its grant resolved once.
 */
describe('SQLite CRUD without Express: the same answers as the Express routes', () => {
  let hp: TestHostplane;
  let site: TestSite;
  let api: SqliteApi;
  let token: string;

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    site = await hp.createSite('fastpath', { plan: 'business' });
    api = sqliteApi(hp, site);
    token = await api.token({ path: 'fast.sqlite', name: 'fast', requireUserAuth: false });
    const created = await api.scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE t (x)' });
    expect(created.status).toBe(200);
  });
  afterAll(() => hp?.stop());

  /** POSTs raw bytes to `path` with the token, plain or gzipped. */
  const send = async (path: string, bytes: Buffer, gzip: boolean, headers: Record<string, string> = {}) => {
    const res = await hp.request(path, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-sqlite-token': token,
        origin: api.origin,
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
        ...headers,
      },
      body: gzip ? gzipSync(bytes) : bytes,
    } as RequestInit);
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
  };

  it('applies the body rules alike: size, UTF-8, JSON, strict top level, validation', async () => {
    const cases: Array<[string, Buffer, number, string | RegExp]> = [
      ['valid', Buffer.from('{"sql":"SELECT 1 AS one"}'), 200, ''],
      [
        'over 1 MB',
        Buffer.from(`{"sql":"SELECT '${'x'.repeat(1024 * 1024)}'"}`),
        413,
        'The request body is too large.',
      ],
      [
        'not UTF-8',
        Buffer.from([0x7b, 0x22, 0x73, 0xff, 0xfe, 0x22, 0x7d]),
        400,
        'The request body is not valid UTF-8.',
      ],
      ['not JSON', Buffer.from('{"sql": SELECT'), 400, 'The request body is not valid JSON.'],
      ['a bare string', Buffer.from('"SELECT 1"'), 400, 'The request body is not valid JSON.'],
      ['empty', Buffer.alloc(0), 400, /sql/],
      ['only whitespace', Buffer.from(' \n\t '), 400, 'The request body is not valid JSON.'],
      ['a byte order mark first', Buffer.from('\uFEFF{"sql":"SELECT 3 AS three"}'), 200, ''],
      [
        'no-break space first',
        Buffer.from('\u00A0{"sql":"SELECT 1"}'),
        400,
        'The request body is not valid JSON.',
      ],
      ['an array', Buffer.from('[1]'), 400, /object/i],
      ['a wrong type', Buffer.from('{"sql": 42}'), 400, /sql/],
    ];
    for (const [what, bytes, status, message] of cases) {
      const plain = await send('/api/v1/sqlite/query', bytes, false);
      const viaExpress = await send('/api/v1/sqlite/query', bytes, true);
      expect(plain.status, what).toBe(status);
      expect(plain.body, what).toEqual(viaExpress.body);
      expect(plain.status, what).toBe(viaExpress.status);
      if (status !== 200) expect(plain.body.message, what).toMatch(message);
    }
  });

  it('answers a query with the text JSON.stringify makes of its answer, alike on both paths', async () => {
    // The worker writes the rows as JSON text and the answer is assembled around it: the bytes
    // must be those of JSON.stringify({success, rows, rowCount, version, truncated}).
    const sql =
      "SELECT 1 AS i, -2.5 AS f, 'é \"q\" \\ \u2028' AS s, NULL AS z, X'00ff' AS b, " +
      "9007199254740993 AS big, 1e300 AS e UNION ALL SELECT 2, 0.1, '', NULL, X'', -9007199254740993, -0.0";
    const bytes = Buffer.from(JSON.stringify({ sql }));
    const raw = async (gzip: boolean) => {
      const res = await hp.request('/api/v1/sqlite/query', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-sqlite-token': token,
          origin: api.origin,
          ...(gzip ? { 'content-encoding': 'gzip' } : {}),
        },
        body: gzip ? gzipSync(bytes) : bytes,
      } as RequestInit);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      return { status: res.status, text: await res.text() };
    };
    const plain = await raw(false);
    expect(plain.status).toBe(200);
    const answer = JSON.parse(plain.text) as { version: number };
    expect(plain.text).toBe(
      JSON.stringify({
        success: true,
        rows: [
          {
            i: 1,
            f: -2.5,
            s: 'é "q" \\ \u2028',
            z: null,
            b: { $base64: 'AP8=' },
            big: { $bigint: '9007199254740993' },
            e: 1e300,
          },
          { i: 2, f: 0.1, s: '', z: null, b: { $base64: '' }, big: { $bigint: '-9007199254740993' }, e: 0 },
        ],
        rowCount: 2,
        version: answer.version,
        truncated: false,
      }),
    );
    expect(await raw(true)).toEqual(plain);
  });

  it('keeps the request id, CORS and the request metrics of the route', async () => {
    const labels = { role: 'all', method: 'POST', route: '/api/v1/sqlite/exec', status: '200' };
    const before = metricValue(await scrapeMetrics(hp), 'hostplane_http_requests_total', labels);
    const res = await send('/api/v1/sqlite/exec', Buffer.from('{"sql":"INSERT INTO t VALUES (1)"}'), false, {
      'x-request-id': 'fast-path-test-1',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, rowsAffected: 1 });
    expect(res.headers.get('x-request-id')).toBe('fast-path-test-1');
    expect(res.headers.get('access-control-allow-origin')).toBe(api.origin);
    expect(res.headers.get('vary')).toMatch(/origin/i);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const after = metricValue(await scrapeMetrics(hp), 'hostplane_http_requests_total', labels);
    expect(after).toBe(before + 1);
  });

  it('reports its statements, their durations, queue wait and grant lookups on /metrics', async () => {
    const read = async () => {
      const text = await scrapeMetrics(hp);
      return {
        ok: metricValue(text, 'hostplane_sqlite_statements_total', { op: 'query', outcome: 'ok' }),
        sql: metricValue(text, 'hostplane_sqlite_statements_total', { op: 'query', outcome: 'sql' }),
        timed: metricValue(text, 'hostplane_sqlite_statement_duration_seconds_count', { op: 'query' }),
        waited: metricValue(text, 'hostplane_sqlite_queue_wait_seconds_count', { op: 'query' }),
        hits: metricValue(text, 'hostplane_sqlite_grant_lookups_total', { result: 'hit' }),
      };
    };
    const before = await read();
    for (let i = 0; i < 3; i++)
      expect((await send('/api/v1/sqlite/query', Buffer.from('{"sql":"SELECT 1"}'), false)).status).toBe(200);
    expect((await send('/api/v1/sqlite/query', Buffer.from('{"sql":"SELECT nope"}'), false)).status).toBe(
      400,
    );
    const after = await read();
    expect(after.ok - before.ok).toBe(3);
    expect(after.sql - before.sql).toBe(1);
    expect(after.timed - before.timed).toBe(4);
    expect(after.waited - before.waited).toBeGreaterThanOrEqual(3);
    expect(after.hits - before.hits).toBeGreaterThanOrEqual(4);
  });

  it('leaves a query string, other methods and a refused Origin to the usual answers', async () => {
    const withQuery = await send('/api/v1/sqlite/query?x=1', Buffer.from('{"sql":"SELECT 2 AS two"}'), false);
    expect(withQuery.body.rows).toEqual([{ two: 2 }]);
    const put = await hp.request('/api/v1/sqlite/query', {
      method: 'PUT',
      headers: { 'x-sqlite-token': token, origin: api.origin },
    });
    expect(put.status).toBe(405);
    const evil = await send('/api/v1/sqlite/query', Buffer.from('{"sql":"SELECT 1"}'), false, {
      origin: 'https://evil.example',
    });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    const version = await api.scoped(token, 'GET', '/api/v1/sqlite/version');
    expect(version.body).toMatchObject({ success: true, version: 2 });
  });

  it('answers a bad token and a refused Origin itself, as Express answers them, and resolves a grant once', async () => {
    const lookups = async () => {
      const text = await scrapeMetrics(hp);
      return (
        metricValue(text, 'hostplane_sqlite_grant_lookups_total', { result: 'hit' }) +
        metricValue(text, 'hostplane_sqlite_grant_lookups_total', { result: 'miss' })
      );
    };
    const answered = (status: string) =>
      scrapeMetrics(hp).then((text) =>
        metricValue(text, 'hostplane_http_requests_total', {
          role: 'all',
          method: 'POST',
          route: '/api/v1/sqlite/query',
          status,
        }),
      );
    const query = Buffer.from('{"sql":"SELECT 1"}');
    const refusals: Array<[string, Record<string, string>, number]> = [
      ['an unknown token', { 'x-sqlite-token': 'not-a-token-of-this-site-at-all' }, 401],
      ['a refused Origin', { origin: 'https://evil.example' }, 403],
    ];
    for (const [what, headers, status] of refusals) {
      // The trailing slash is not a raw route: Express answers it (the same route, non-strict).
      const viaExpress = await send('/api/v1/sqlite/query/', query, false, headers);
      const [lookupsBefore, answeredBefore] = [await lookups(), await answered(String(status))];
      const raw = await send('/api/v1/sqlite/query', query, false, headers);
      expect(raw.status, what).toBe(status);
      expect(await lookups(), what).toBe(lookupsBefore + 1);
      expect(await answered(String(status)), what).toBe(answeredBefore + 1);
      expect(raw.body, what).toEqual(viaExpress.body);
      expect(viaExpress.status, what).toBe(status);
      for (const header of ['content-type', 'content-length', 'vary', 'access-control-allow-origin'])
        expect(raw.headers.get(header), `${what}: ${header}`).toBe(viaExpress.headers.get(header));
    }
    // A gzip body goes to Express with the grant the fast path resolved: not resolved again there.
    const before = await lookups();
    expect((await send('/api/v1/sqlite/query', query, true)).status).toBe(200);
    expect(await lookups()).toBe(before + 1);
  });

  it('answers concurrent writes each with its own row and counts how many shared a COMMIT', async () => {
    const read = async () => {
      const text = await scrapeMetrics(hp);
      return {
        count: metricValue(text, 'hostplane_sqlite_write_group_size_count'),
        sum: metricValue(text, 'hostplane_sqlite_write_group_size_sum'),
      };
    };
    const before = await read();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        send(
          '/api/v1/sqlite/exec',
          Buffer.from(JSON.stringify({ sql: 'INSERT INTO t VALUES (?)', params: [1000 + i] })),
          false,
        ),
      ),
    );
    expect(answers.every((a) => a.status === 200 && a.body.rowsAffected === 1)).toBe(true);
    const rowids = answers.map((a) => a.body.lastInsertRowId as number);
    expect(new Set(rowids).size).toBe(20);
    const versions = answers.map((a) => a.body.version as number);
    expect(new Set(versions).size).toBe(20);
    const after = await read();
    expect(after.count - before.count).toBe(20);
    expect(after.sum - before.sum).toBeGreaterThanOrEqual(20);
  });
});
