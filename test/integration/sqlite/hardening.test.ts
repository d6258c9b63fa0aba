import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../../src/http/index.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { sqliteApi, type SqliteApi } from '../../support/sqlite-api.js';

/**
 * Issue 16 through the real server: a request that nests deep (which overflowed the stack of the
 * engine's dispatch and ended the process) is a 400 on both ways of serving (the fast path, and
 * Express for a gzip body), and the process answers on; one wide row is a 400, not 400 MB.
 */
describe('SQLite over HTTP: no request takes the process down', () => {
  let hp: TestHostplane;
  let api: SqliteApi;
  let token: string;

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    const site = await hp.createSite('hardening', { plan: 'business' });
    api = sqliteApi(hp, site);
    token = await api.token({ path: 'hard.sqlite', name: 'hard', requireUserAuth: false });
    const created = await api.scoped(token, 'POST', '/api/v1/sqlite/exec', { sql: 'CREATE TABLE t (x)' });
    expect(created.status).toBe(200);
  });
  afterAll(() => hp?.stop());

  const send = async (path: string, text: string, gzip: boolean) => {
    const res = await hp.request(path, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-sqlite-token': token,
        origin: api.origin,
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      },
      body: gzip ? gzipSync(text) : text,
    } as RequestInit);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

  it.each([
    ['query, params 5,000 deep', '/api/v1/sqlite/query', `{"sql":"SELECT ?","params":[${nested(5_000)}]}`],
    [
      'batch, params 5,000 deep',
      '/api/v1/sqlite/batch',
      `{"statements":[{"sql":"INSERT INTO t VALUES (?)","params":[${nested(5_000)}]}]}`,
    ],
    ['query, a body 100,000 deep', '/api/v1/sqlite/query', `{"sql":"SELECT 1","x":${nested(100_000)}}`],
  ])('%s: 400 on both paths, and the process answers on', async (_what, path, text) => {
    for (const gzip of [false, true]) {
      const res = await send(path, text, gzip);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'Bad Request',
        message: `The request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.`,
      });
    }
    expect((await hp.request('/healthz')).status).toBe(200);
    const alive = await send('/api/v1/sqlite/query', '{"sql":"SELECT 1 AS one"}', false);
    expect(alive).toEqual({ status: 200, body: expect.objectContaining({ rows: [{ one: 1 }] }) });
  });

  it('refuses a parameter that is not a value (nested, a list) before the engine, on both paths', async () => {
    for (const params of [`[${nested(10)}]`, '[[1]]', '[{"a":{"b":1}}]', '[1, {"$base64":["AA=="]}]']) {
      for (const gzip of [false, true]) {
        const res = await send('/api/v1/sqlite/query', `{"sql":"SELECT ?","params":${params}}`, gzip);
        expect(res.status, params).toBe(400);
        expect(res.body.error).toBe('Bad Request');
        expect(res.body.message).toMatch(/^params\.\d must be a value/);
      }
    }
    // The engine still names a tagged value it cannot read.
    const bad = await send('/api/v1/sqlite/query', '{"sql":"SELECT ?","params":[{"$bigint":"x"}]}', false);
    expect(bad).toMatchObject({ status: 400, body: { error: 'SQL error' } });
  });

  it('answers one wide row of large values with a 400 naming the cap, not hundreds of MB', async () => {
    const columns = Array.from({ length: 40 }, (_, i) => `printf('%.2000000c', 'x') AS c${i}`);
    const res = await send(
      '/api/v1/sqlite/query',
      JSON.stringify({ sql: `SELECT ${columns.join(', ')}` }),
      false,
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'SQL error', code: 'SQLITE_TOOBIG' });
    expect(res.body.message).toMatch(/cap/);
  });
});
