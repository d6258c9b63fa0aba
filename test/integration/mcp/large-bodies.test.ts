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
 * Large /mcp bodies (inline deploys) cost several times their size once parsed: at most
 * HOSTPLANE_UPLOADS_MAX_CONCURRENT of them are read at once per process, the next is refused
 * before its body is read (503 + Retry-After), and small calls are never held back by them.
 */
describe('MCP: large bodies share the process upload bound', () => {
  let hp: TestHostplane;
  let site: TestSite;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', { env: { HOSTPLANE_UPLOADS_MAX_CONCURRENT: '2' } });
    site = await hp.createSite('mcp-large');
  });
  afterAll(() => hp?.stop());

  /** A keyed POST /mcp announcing `length` bytes and sending one: held open until destroyed. */
  const held = (length: number) => {
    const req = http.request({
      host: '127.0.0.1',
      port: hp.port,
      method: 'POST',
      path: '/mcp',
      headers: {
        host: 'localhost:8080',
        authorization: `Bearer ${site.apiKey}`,
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

  it('refuses a third large body while two are being read, serves small calls, and frees the slot', async () => {
    const big = 5 * 1024 * 1024;
    const first = held(big);
    const second = held(big);
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
    expect(((await refused.json()) as { message: string }).message).toContain('large MCP requests');

    const small = await ping(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }));
    expect(small.status, await small.clone().text()).toBe(200);

    first.destroy();
    second.destroy();
    await eventually('the slots freed', async () => ((await inFlight()) === 0 ? true : undefined));
    expect((await ping(large)).status).toBe(200);
  });
});
