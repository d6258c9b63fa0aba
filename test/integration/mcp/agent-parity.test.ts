import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formsApi } from '../../support/forms-api.js';
import { startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { call, connect, fails, ok, textOf, type Json } from './support.js';

// What an agent gets through MCP beside what a person gets (issue 30): deploys that keep the
// site whole (mode merge, counts), cancel_deploy, refusals that name the file, the form's embed
// snippet, SQLite answers in the API's own names and a read in read-only mode, and the protocol's
// own answers (no listChanged from a stateless server, -32700 for bad JSON).

describe('MCP: agents get what a person gets', () => {
  let hp: TestHostplane;
  let site: TestSite;
  let client: Client;
  const served = async (path: string) => {
    const res = await hp.request(path, { host: `${site.slug}.localhost` });
    return { status: res.status, text: await res.text() };
  };
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${hp.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${site.apiKey}`,
        ...headers,
      },
      body,
    });

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    site = await hp.createSite('parity', { plan: 'business' });
    client = await connect(hp.url, { key: site.apiKey });
  });
  afterAll(async () => {
    await client?.close();
    await hp?.stop();
  });

  describe('deploys keep the site whole', () => {
    const pages = Array.from({ length: 300 }, (_, i) => ({ path: `p/${i}.html`, content: `<p>${i}</p>` }));

    it('deploy_files needs a mode: an agent says whether it replaces the site or changes some files', async () => {
      const missing = await call(client, 'deploy_files', { files: [{ path: 'index.html', content: 'x' }] });
      expect(missing.isError).toBe(true);
      expect(textOf(missing)).toMatch(/mode/);
      expect((await served('/index.html')).status).toBe(404);
    });

    it('mode merge changes one page of a 300-file site and the other 299 stay; answers count the change', async () => {
      const first = await ok(client, 'deploy_files', { mode: 'replace', files: pages });
      expect(first.deploy).toMatchObject({
        file_count: 300,
        changes: { added: 300, changed: 0, removed: 0 },
      });
      const one = await ok(client, 'deploy_files', {
        mode: 'merge',
        files: [{ path: 'p/7.html', content: '<p>seven</p>' }],
      });
      expect(one.deploy).toMatchObject({ file_count: 300, changes: { added: 0, changed: 1, removed: 0 } });
      expect(one.changes).toEqual({ added: 0, changed: 1, removed: 0 });
      expect(await served('/p/7.html')).toEqual({ status: 200, text: '<p>seven</p>' });
      expect(await served('/p/299.html')).toEqual({ status: 200, text: '<p>299</p>' });

      const dropped = await ok(client, 'deploy_files', {
        mode: 'merge',
        files: [{ path: 'index.html', content: 'home' }],
        removed: ['p/0.html', 'p/1.html'],
      });
      expect(dropped.changes).toEqual({ added: 1, changed: 0, removed: 2 });
      expect((await served('/p/0.html')).status).toBe(404);
      expect((await served('/p/2.html')).status).toBe(200);

      const replaced = await ok(client, 'deploy_files', {
        mode: 'replace',
        files: [{ path: 'index.html', content: 'home' }],
      });
      expect(replaced.changes).toEqual({ added: 0, changed: 0, removed: 298 });
    });

    it('cancel_deploy cancels an unfinished deploy', async () => {
      const started = await ok(client, 'deploy_manifest', {
        mode: 'replace',
        files: { 'index.html': 'a'.repeat(64) },
      });
      const id = started.deploy.id as string;
      const cancelled = await ok(client, 'cancel_deploy', { deploy_id: id });
      expect(cancelled).toEqual({ cancelled: id });
      expect((await fails(client, 'get_deploy', { deploy_id: id })).status).toBe(404);
    });

    it('a file over its limit is named before a deploy exists', async () => {
      const before = (await ok(client, 'list_deploys')).pagination.total_items as number;
      const big = Buffer.alloc(10 * 1024 * 1024 + 1, 7).toString('base64');
      const refused = await fails(client, 'deploy_files', {
        mode: 'merge',
        files: [
          { path: 'docs/manual.pdf', content: big, encoding: 'base64' },
          { path: 'ok.html', content: 'fine' },
        ],
      });
      expect(refused.status).toBe(400);
      expect(refused.message).toMatch(/docs\/manual\.pdf/);
      expect(refused.message).toMatch(/10 MB/);
      expect(refused.files).toEqual([
        { path: 'docs/manual.pdf', size: 10 * 1024 * 1024 + 1, max_size_bytes: 10 * 1024 * 1024 },
      ]);
      expect((await ok(client, 'list_deploys')).pagination.total_items).toBe(before);
    });

    it('write_file of a file over 10 MB names the file', async () => {
      const big = Buffer.alloc(10 * 1024 * 1024 + 1, 7).toString('base64');
      const refused = await fails(client, 'write_file', {
        path: 'docs/huge.pdf',
        content: big,
        encoding: 'base64',
      });
      expect(refused.status).toBe(400);
      expect(refused.message).toMatch(/^docs\/huge\.pdf: .*10 MB/);
      expect(refused.path).toBe('docs/huge.pdf');
    });

    it('a body over 20 MB is pointed at deploy_manifest + upload_blob', async () => {
      const big = await post(
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', pad: 'x'.repeat(21 * 1024 * 1024) }),
      );
      expect(big.status).toBe(413);
      expect(((await big.json()) as Json).message).toMatch(/deploy_manifest.*upload_blob/);
    });
  });

  it("get_form_embed answers the same snippets as the console's (the API's embed routes)", async () => {
    const form = await ok(client, 'create_form', {
      name: 'Contact',
      fields: [{ name: 'email', label: 'Email', type: 'email', required: true }],
    });
    const id = form.form.id as number;
    const api = formsApi(hp, site);
    for (const kind of ['html', 'react', 'curl'] as const) {
      const got = await ok(client, 'get_form_embed', { form_id: id, kind });
      const fromApi = (await api.call('GET', `/api/v1/forms/${id}/embed/${kind}`)).body as Json;
      expect(got.snippet).toBe(fromApi.snippet);
      expect(got.kind).toBe(kind);
    }
    expect((await ok(client, 'get_form_embed', { form_id: id })).kind).toBe('html');
  });

  describe('sqlite', () => {
    let token: string;
    beforeAll(async () => {
      const installed = await ok(client, 'sqlite_install', {
        path: 'data/app.sqlite',
        name: 'agent',
        requireUserAuth: false,
      });
      expect(installed).toMatchObject({ requiresUserAuth: false, path: 'data/app.sqlite' });
      expect(typeof installed.tokenId).toBe('number');
      token = installed.token as string;
    });

    it("answers in the SQLite API's own field names", async () => {
      await ok(client, 'sqlite_exec', {
        token,
        sql: 'create table notes (id integer primary key, body text)',
      });
      const inserted = await ok(client, 'sqlite_exec', {
        token,
        sql: 'insert into notes (body) values (?)',
        params: ['one'],
      });
      expect(inserted).toMatchObject({ rowsAffected: 1, lastInsertRowId: 1 });
      const rows = await ok(client, 'sqlite_query', { token, sql: 'select body from notes' });
      expect(rows).toMatchObject({ rowCount: 1, rows: [{ body: 'one' }] });
    });

    it('a token that is unknown or revoked says to call sqlite_install again', async () => {
      const refused = await fails(client, 'sqlite_query', { token: 'sqlt_not-a-token', sql: 'select 1' });
      expect(refused.status).toBe(401);
      expect(refused.hint_for_ai).toMatch(/sqlite_install/);
    });

    it('read-only mode reads a database by its path; the read is enforced read-only and leaves no token', async () => {
      const tokensBefore = await hp.request('/api/v1/sqlite/auth/tokens', {
        headers: { 'x-api-key': site.apiKey },
      });
      const active = (tokens: Json[]) => tokens.filter((t) => t.revokedAt === null).length;
      const countBefore = active(((await tokensBefore.json()) as Json).tokens);
      const reader = await connect(hp.url, { key: site.apiKey, query: 'read_only=true' });
      const names = (await reader.listTools()).tools.map((t) => t.name);
      expect(names).toContain('sqlite_query');
      const rows = await ok(reader, 'sqlite_query', {
        path: 'data/app.sqlite',
        sql: 'select body from notes',
      });
      expect(rows.rows).toEqual([{ body: 'one' }]);
      const write = await fails(reader, 'sqlite_query', {
        path: 'data/app.sqlite',
        sql: 'delete from notes',
      });
      expect(write.status).toBe(400);
      const unknown = await fails(reader, 'sqlite_query', { path: 'data/none.sqlite', sql: 'select 1' });
      expect(unknown.status).toBe(404);
      await reader.close();
      expect(
        (await ok(client, 'sqlite_query', { token, sql: 'select count(*) as n from notes' })).rows,
      ).toEqual([{ n: 1 }]);
      const tokensAfter = await hp.request('/api/v1/sqlite/auth/tokens', {
        headers: { 'x-api-key': site.apiKey },
      });
      expect(active(((await tokensAfter.json()) as Json).tokens)).toBe(countBefore);
    });
  });

  describe('the protocol', () => {
    it('a stateless server does not advertise listChanged', async () => {
      const res = await post(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'raw', version: '1' },
          },
        }),
      );
      const body = (await res.json()) as Json;
      expect(body.result.capabilities.tools).toBeDefined();
      expect(body.result.capabilities.tools.listChanged).toBeUndefined();
    });

    it('malformed JSON is a JSON-RPC parse error (-32700) with HTTP 400', async () => {
      const res = await post('{not json');
      expect(res.status).toBe(400);
      const body = (await res.json()) as Json;
      expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
      expect(body.error.message).toMatch(/Parse error/);
    });
  });
});
