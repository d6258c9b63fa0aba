import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import {
  metricValue,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

/**
 * Large /mcp bodies (inline deploys) cost several times their size once parsed: they take three
 * times their length of the process's upload byte budget (HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB), one
 * that does not fit is refused before its body is read (503 + Retry-After), and small calls are
 * never held back by them.
 */
describe('MCP: large bodies share the process upload byte budget', () => {
  let hp: TestHostplane;
  let site: TestSite;
  let others: TestSite[];
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', {
      env: { HOSTPLANE_UPLOADS_MAX_INFLIGHT_MB: '30', HOSTPLANE_UPLOADS_MAX_SITE_INFLIGHT_MB: '15' },
    });
    site = await hp.createSite('mcp-large');
    others = [await hp.createSite('mcp-large-1'), await hp.createSite('mcp-large-2')];
  });
  afterAll(() => hp?.stop());

  /** A keyed POST /mcp announcing `length` bytes and sending one: held open until destroyed. */
  const held = (length: number, key: string) => {
    const req = http.request({
      host: '127.0.0.1',
      port: hp.port,
      method: 'POST',
      path: '/mcp',
      headers: {
        host: 'localhost:8080',
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': String(length),
      },
    });
    req.on('error', () => undefined);
    req.write('{');
    return req;
  };
  const ping = (body: string) =>
    hp.request('/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${site.apiKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body,
    });
  const inFlight = async () => metricValue(await scrapeMetrics(hp), 'hostplane_mcp_large_bodies_in_flight');

  it('refuses a large body the budget has no room for while two are being read, serves small calls, and frees the bytes', async () => {
    // Two callers' 5 MiB bodies take 15 MiB each: the whole 30 MiB budget.
    const big = 5 * 1024 * 1024;
    const first = held(big, others[0]!.apiKey);
    const second = held(big, others[1]!.apiKey);
    await eventually('two large bodies admitted', async () => ((await inFlight()) === 2 ? true : undefined));

    const pad = 'x'.repeat(2 * 1024 * 1024);
    const large = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
        pad,
      },
    });
    const refused = await ping(large);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(((await refused.json()) as { message: string }).message).toBe(
      'This server is receiving 30 MB of uploads already; try again in a moment.',
    );

    const small = await ping(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }));
    expect(small.status, await small.clone().text()).toBe(200);

    first.destroy();
    second.destroy();
    await eventually('the bytes freed', async () => ((await inFlight()) === 0 ? true : undefined));
    expect((await ping(large)).status).toBe(200);
  });
});
