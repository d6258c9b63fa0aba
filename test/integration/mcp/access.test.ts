import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { call, connect, fails, ok, textOf, type Json } from './support.js';

// What a client sees of the MCP server: the tool list and its URL options, who may call what, and
// the HTTP answers around the protocol (in the API's `{error, message}` shape).

const WRITE_TOOLS = [
  'publish_page',
  'deploy_files',
  'write_file',
  'delete_file',
  'create_form',
  'sqlite_exec',
];

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

describe('MCP access', () => {
  let hp: TestHostplane;
  let siteA: TestSite;
  let siteB: TestSite;

  const post = (query: string, headers: Record<string, string>, body: string = JSON.stringify(initialize)) =>
    fetch(`${hp.url}/mcp${query}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body,
    });

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    siteA = await hp.createSite('mcpa');
    siteB = await hp.createSite('mcpb');
  });
  afterAll(() => hp?.stop());

  describe('the tool list', () => {
    it('lists at most 40 tools, each described with input and output schemas and hints', async () => {
      const client = await connect(hp.url, { key: siteA.apiKey });
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThanOrEqual(20);
      expect(tools.length).toBeLessThanOrEqual(40);
      for (const tool of tools) {
        expect(tool.name).toMatch(/^[a-z_]+$/);
        expect(tool.description!.length).toBeGreaterThan(20);
        expect(tool.inputSchema.type).toBe('object');
        expect(tool.outputSchema?.type).toBe('object');
        expect(typeof tool.annotations?.readOnlyHint).toBe('boolean');
      }
      expect(tools.find((t) => t.name === 'delete_folder')?.annotations?.destructiveHint).toBe(true);
      await client.close();
    });

    it('read_only=true lists no write tool, and a write tool cannot be called', async () => {
      const client = await connect(hp.url, { key: siteA.apiKey, query: 'read_only=true' });
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThan(5);
      expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
      for (const name of WRITE_TOOLS) expect(tools.map((t) => t.name)).not.toContain(name);
      const refused = await call(client, 'write_file', { path: 'ro.txt', content: 'no' });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/write_file not found/);
      expect((await hp.request('/ro.txt', { host: 'mcpa.localhost' })).status).toBe(404);
      expect((await ok(client, 'list_files')).files).toEqual([]);
      await client.close();
    });

    it('features= lists only the chosen groups', async () => {
      const client = await connect(hp.url, { key: siteA.apiKey, query: 'features=files,usage' });
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(names).toEqual(
        [
          'delete_file',
          'delete_folder',
          'get_usage',
          'list_files',
          'move_file',
          'read_file',
          'write_file',
        ].sort(),
      );
      await client.close();
      const both = await connect(hp.url, { key: siteA.apiKey, query: 'features=deploys&read_only=1' });
      expect((await both.listTools()).tools.map((t) => t.name).sort()).toEqual([
        'get_deploy',
        'list_deploys',
      ]);
      await both.close();
    });

    it('an unknown option value is a 400 in the API shape', async () => {
      for (const query of ['?features=files,nope', '?features=', '?read_only=maybe']) {
        const res = await post(query, { authorization: `Bearer ${siteA.apiKey}` });
        expect(res.status).toBe(400);
        const body = (await res.json()) as Json;
        expect(body.error).toBe('Bad Request');
        expect(body.message).toMatch(/features|read_only/);
      }
    });
  });

  describe('authentication', () => {
    it('without a key, publish_page works and the other tools name how to authenticate', async () => {
      const client = await connect(hp.url);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('list_files');
      const page = await ok(client, 'publish_page', { html: '<!doctype html><p>anonymous</p>' });
      expect(await (await hp.request(new URL(page.url as string).pathname)).text()).toContain('anonymous');
      const refused = await fails(client, 'list_files');
      expect(refused).toMatchObject({ status: 401, error: 'Unauthorized' });
      expect(refused.message).toMatch(/Authorization: Bearer/);
      expect(refused.hint_for_ai).toMatch(/API key/);
      await client.close();
    });

    it('an invalid or empty key is an HTTP 401 with the registry body, before any tool', async () => {
      for (const headers of <Record<string, string>[]>[
        { authorization: 'Bearer hp_live_not-a-key' },
        { authorization: 'Bearer ' },
        { 'x-api-key': 'wrong' },
      ]) {
        const res = await post('', headers);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
        const body = (await res.json()) as Json;
        expect(body).toMatchObject({ error: 'Unauthorized', message: 'Invalid or expired API key.' });
        expect(body.hint_for_ai).toMatch(/Authorization: Bearer/);
      }
      await expect(connect(hp.url, { key: 'hp_live_wrong' })).rejects.toThrow(/Invalid or expired API key/);
    });

    it('accepts a temporary key like a permanent one', async () => {
      const session = await hp.services.platform.accounts.sessions.create(
        hp.services.store.db,
        siteA.accountId,
        'bearer',
      );
      const temp = await hp.services.platform.keys.createTemporary(siteA.siteId, 600, session.id);
      const client = await connect(hp.url, { key: temp.key });
      expect((await ok(client, 'get_usage')).site.subdomain).toBe('mcpa');
      await client.close();
    });

    it('accepts the key as X-API-Key too', async () => {
      const client = await connect(hp.url, { key: siteA.apiKey, header: 'x-api-key' });
      expect((await ok(client, 'get_usage')).site.subdomain).toBe('mcpa');
      await client.close();
    });

    it("a key of site A cannot reach site B's forms or databases", async () => {
      const a = await connect(hp.url, { key: siteA.apiKey });
      const b = await connect(hp.url, { key: siteB.apiKey });
      const form = (
        await ok(b, 'create_form', { name: 'B', fields: [{ name: 'x', label: 'X', type: 'text' }] })
      ).form as Json;
      expect((await fails(a, 'get_form', { form_id: form.id })).status).toBe(404);
      expect((await fails(a, 'list_submissions', { form_id: form.id })).status).toBe(404);
      expect((await fails(a, 'delete_form', { form_id: form.id })).status).toBe(404);
      expect((await ok(b, 'get_form', { form_id: form.id })).form.id).toBe(form.id);

      const { token } = await ok(b, 'sqlite_install', {
        path: 'b.sqlite',
        name: 'b',
        requireUserAuth: false,
      });
      const crossed = await fails(a, 'sqlite_query', { token, sql: 'select 1' });
      expect(crossed).toMatchObject({
        status: 403,
        message: 'Request Origin is not permitted for this token.',
      });
      expect((await ok(b, 'sqlite_query', { token, sql: 'select 1 as one' })).rows).toEqual([{ one: 1 }]);
      await a.close();
      await b.close();
    });

    it("publish_page counts against the caller's own address (as trust proxy resolves it)", async () => {
      const from = (ip: string) => connect(hp.url, { headers: { 'x-forwarded-for': ip } });
      const busy = await from('203.0.113.7');
      for (let i = 0; i < 10; i++) await ok(busy, 'publish_page', { html: `<!doctype html><p>${i}</p>` });
      const limited = await fails(busy, 'publish_page', { html: '<!doctype html><p>one too many</p>' });
      expect(limited).toMatchObject({ status: 429 });
      expect(limited.retry_after_seconds).toBeGreaterThan(0);
      expect(limited.hint_for_ai).toMatch(/wait/i);
      const other = await from('203.0.113.8');
      await ok(other, 'publish_page', { html: '<!doctype html><p>another address</p>' });
      await busy.close();
      await other.close();
    });
  });

  describe('HTTP around the protocol', () => {
    it('GET and DELETE are 405 with Allow: POST (stateless: no stream, no session)', async () => {
      for (const method of ['GET', 'DELETE']) {
        const res = await fetch(`${hp.url}/mcp`, { method, headers: { accept: 'text/event-stream' } });
        expect(res.status).toBe(405);
        expect(res.headers.get('allow')).toBe('POST');
        expect(await res.json()).toEqual({
          error: 'Method Not Allowed',
          message: `${method} is not allowed here; use POST.`,
        });
      }
    });

    it('answers without a session id', async () => {
      const res = await post('', {});
      expect(res.status).toBe(200);
      expect(res.headers.get('mcp-session-id')).toBeNull();
      expect(((await res.json()) as Json).result.serverInfo.name).toBe('hostplane');
    });

    it('bounds a keyless body to what publish_page can use (no 20 MB parse for anyone)', async () => {
      const pad = 'x'.repeat(6 * 1024 * 1024);
      const padded = JSON.stringify({ ...initialize, params: { ...initialize.params, pad } });
      const keyless = await post('', {}, padded);
      expect(keyless.status).toBe(413);
      expect(((await keyless.json()) as Json).error).toBe('Payload Too Large');
      const keyed = await post('', { authorization: `Bearer ${siteA.apiKey}` }, padded);
      expect(keyed.status).toBe(200);
      // The largest page publish_page takes still fits without a key.
      const page = `<!doctype html><p>${'y'.repeat(1_000_000)}</p>`;
      const call = {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'publish_page', arguments: { html: page } },
      };
      const published = await post('', { 'mcp-protocol-version': '2025-06-18' }, JSON.stringify(call));
      expect(published.status).toBe(200);
      expect(((await published.json()) as Json).result.isError).toBeUndefined();
    });

    it('bounds a JSON-RPC batch: each message is a tool call running at once', async () => {
      const pings = (n: number) =>
        JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'ping' })));
      const headers = { authorization: `Bearer ${siteA.apiKey}`, 'mcp-protocol-version': '2025-03-26' };
      const ten = await post('', headers, pings(10));
      expect(ten.status).toBe(200);
      expect((await ten.json()) as Json[]).toHaveLength(10);
      const eleven = await post('', headers, pings(11));
      expect(eleven.status).toBe(400);
      expect(await eleven.json()).toEqual({
        error: 'Bad Request',
        message: 'A JSON-RPC batch holds at most 10 messages.',
      });
    });

    it('bounds the body in the API shape and refuses bad JSON as JSON-RPC does (-32700)', async () => {
      const big = await post('', {}, JSON.stringify({ ...initialize, pad: 'x'.repeat(21 * 1024 * 1024) }));
      expect(big.status).toBe(413);
      expect(((await big.json()) as Json).error).toBe('Payload Too Large');
      const bad = await post('', {}, '{not json');
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: 'Parse error: the request body is not valid JSON.' },
      });
    });
  });

  it('GET /llms.txt tells an agent where everything is, and is in the OpenAPI document', async () => {
    const res = await fetch(`${hp.url}/llms.txt`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text.startsWith('# Hostplane\n\n> ')).toBe(true);
    for (const needle of [
      'http://localhost:8080/mcp',
      'http://localhost:8080/api/v1/openapi.json',
      'http://localhost:8080/docs',
      'http://localhost:8080/console',
      'X-API-Key',
      'Authorization: Bearer <key>',
      'read_only=true',
      'features=publish,deploys,files,forms,sqlite,usage',
      '/ai/publish',
      'POST /api/v1/deploys',
    ])
      expect(text).toContain(needle);
    const doc = (await (await fetch(`${hp.url}/api/v1/openapi.json`)).json()) as Json;
    expect(doc.paths['/llms.txt'].get.responses['200'].content['text/plain']).toBeDefined();
  });

  it('counts tool calls by tool and outcome on /metrics', async () => {
    const client = await connect(hp.url);
    await call(client, 'list_deploys');
    await client.close();
    const metrics = await (await fetch(`${hp.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /hostplane_mcp_tool_calls_total\{tool="list_deploys",outcome="unauthenticated"\} [1-9]/,
    );
    expect(metrics).toMatch(/hostplane_mcp_tool_duration_seconds_count\{tool="list_deploys"\} [1-9]/);
  });
});
