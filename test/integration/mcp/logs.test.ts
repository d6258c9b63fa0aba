import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import { startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { connect, fails, ok, type Json } from './support.js';

// What the MCP server leaves in the logs: the API calls a tool makes carry the MCP request's id
// (one id to follow a tool call through), and neither the key nor a tool's content is in any line.
describe('MCP logs', () => {
  const lines: Json[] = [];
  let hp: TestHostplane;
  let site: TestSite;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as Json);
        done();
      },
    });
    hp = await startHostplane('pglite+fs', { logger: createLogger('info', sink) });
    site = await hp.createSite('mcplog');
  });
  afterAll(() => hp?.stop());

  it("an API call of a tool is logged under the MCP request's id; no key or content in any line", async () => {
    const requestId = 'mcp-trace-0001';
    const client = await connect(hp.url, { key: site.apiKey, headers: { 'x-request-id': requestId } });
    await ok(client, 'write_file', { path: 'secret.txt', content: 'the-content-itself' });
    await fails(client, 'read_file', { path: 'missing.txt' });
    await client.close();
    const ours = lines.filter((line) => (line.req as Json | undefined)?.id === requestId);
    const urls = ours.map((line) => String((line.req as Json).url));
    expect(urls).toContain('/api/v1/files/upload');
    expect(urls.some((url) => url.startsWith('/api/v1/files/get?'))).toBe(true);
    expect(urls).toContain('/mcp');
    const all = JSON.stringify(lines);
    expect(all).toContain('mcp tool call');
    expect(all).not.toContain(site.apiKey);
    expect(all).not.toContain('the-content-itself');
  });
});
