import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, invitedOwner, PASSWORD, tokenOf, type Answer } from '../../support/account-api.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { sqliteApi } from '../../support/sqlite-api.js';
import { totpCode } from '../../support/totp.js';

// Every answer that carries a secret (a key, a token, a session, a TOTP secret, recovery codes)
// is sent with `Cache-Control: no-store`, so no browser, proxy or CDN keeps a copy. One mechanism
// holds it: the route registry's `secret` flag, documented in the OpenAPI document as the
// `Cache-Control` header of the route's successes.

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- OpenAPI nodes, read field by field

/**
 * Names of answer fields that hold a secret: tokens, keys, secrets, challenges, codes and URIs
 * that embed a secret. `key_prefix`, `tokenId`, `tokens` (records) and `activeTokens` (a count)
 * do not match.
 */
const SECRET_FIELD = /(^|_)(token|secret|key|challenge|codes?|uri)$|[a-z]Token$/;

/** Every property name anywhere in a schema (refs resolved against the document's components). */
function propertyNames(doc: Json, schema: unknown, out = new Set<string>(), seen = new Set<unknown>()) {
  let node = schema as Json | undefined;
  if (node?.$ref) node = doc.components.schemas[String(node.$ref).split('/').pop()!];
  if (!node || typeof node !== 'object' || seen.has(node)) return out;
  seen.add(node);
  for (const [name, value] of Object.entries((node.properties ?? {}) as Json)) {
    out.add(name);
    propertyNames(doc, value, out, seen);
  }
  for (const key of ['items', 'additionalProperties'])
    if (node[key]) propertyNames(doc, node[key], out, seen);
  for (const key of ['anyOf', 'oneOf', 'allOf'])
    for (const s of node[key] ?? []) propertyNames(doc, s, out, seen);
  return out;
}

interface Operation {
  method: string;
  path: string;
  /** Whether the document says its successes are sent with `Cache-Control: no-store`. */
  noStore: boolean;
  /** Its success answers' fields that look like secrets. */
  secretFields: string[];
}

function operationsOf(doc: Json): Operation[] {
  const operations: Operation[] = [];
  for (const [path, byMethod] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(byMethod as Json)) {
      const successes = Object.entries(op.responses as Json).filter(([status]) => /^2/.test(status));
      const fields = new Set<string>();
      for (const [, response] of successes)
        for (const media of Object.values((response.content ?? {}) as Json))
          propertyNames(doc, media.schema, fields);
      operations.push({
        method,
        path,
        noStore:
          successes.length > 0 &&
          successes.every(([, r]) => r.headers?.['Cache-Control']?.schema?.const === 'no-store'),
        secretFields: [...fields].filter((f) => SECRET_FIELD.test(f)),
      });
    }
  }
  return operations;
}

const noStore = (answer: Answer) => expect(answer.headers.get('cache-control')).toBe('no-store');

describe.each(backends)('answers that carry a secret are never stored (%s)', (backend) => {
  let hp: TestHostplane;
  let doc: Json;

  beforeAll(async () => {
    hp = await startHostplane(backend);
    doc = (await (await hp.request('/api/v1/openapi.json')).json()) as Json;
  });
  afterAll(() => hp?.stop());

  describe('the registry', () => {
    it('flags every route whose success answers a secret-looking field (a new one cannot forget it)', () => {
      const operations = operationsOf(doc);
      const forgotten = operations
        .filter((op) => op.secretFields.length > 0 && !op.noStore)
        .map((op) => `${op.method} ${op.path} (${op.secretFields.join(', ')})`);
      expect(forgotten).toEqual([]);
      // The answers the security review listed are among the flagged ones.
      const flagged = operations.filter((op) => op.noStore).map((op) => `${op.method} ${op.path}`);
      expect(flagged).toEqual(
        expect.arrayContaining([
          'post /api/keys/generate-temp',
          'post /api/v1/account/sites',
          'post /api/v1/account/sites/{siteId}/keys',
          'post /api/v1/account/sign-in',
          'post /api/v1/account/sign-in/totp',
          'post /api/v1/account/invitations/accept',
          'get /api/v1/account',
          'post /api/v1/account/totp/setup',
          'post /api/v1/account/totp/confirm',
          'post /api/v1/account/totp/recovery-codes',
          'post /api/v1/sqlite/auth/install',
          'post /api/v1/sqlite/auth/login',
        ]),
      );
    });

    it('sends no-store on every flagged route, whatever the answer (walked from the OpenAPI document)', async () => {
      const flagged = operationsOf(doc).filter((op) => op.noStore);
      expect(flagged.length).toBeGreaterThanOrEqual(12);
      for (const op of flagged) {
        // No credential, no body: refused (401, 400, 403, …) — and still never stored.
        const path = op.path.replace(/\{\w+\}/g, '1');
        const answer = await call(hp, op.method.toUpperCase(), path, op.method === 'get' ? {} : { json: {} });
        expect(answer.status, `${op.method} ${op.path}`).toBeGreaterThanOrEqual(400);
        expect(answer.headers.get('cache-control'), `${op.method} ${op.path}`).toBe('no-store');
      }
    });
  });

  describe('each answer through the real server', () => {
    it('the session of an accepted invitation, sign-in (bearer and cookie) and the account with its csrf_token', async () => {
      const owner = { email: `ns-invite-${backend}@example.com` };
      const invited = await hp.services.platform.accounts.invite({ email: owner.email });
      const accepted = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
        json: { token: tokenOf(invited.link), password: PASSWORD },
      });
      expect(accepted.body.token).toBeTypeOf('string');
      noStore(accepted);
      const bearer = await call(hp, 'POST', '/api/v1/account/sign-in', {
        json: { email: owner.email, password: PASSWORD },
      });
      expect(bearer.status).toBe(200);
      expect(bearer.body.token).toBeTypeOf('string');
      noStore(bearer);
      const cookie = await call(hp, 'POST', '/api/v1/account/sign-in', {
        json: { email: owner.email, password: PASSWORD, session: 'cookie' },
      });
      expect(cookie.body.csrf_token).toBeTypeOf('string');
      noStore(cookie);
      const me = await call(hp, 'GET', '/api/v1/account', {
        // The session's cookie, not the device cookie set beside it (docs/developers/security.md "Sign-in attempts and lockout").
        headers: {
          cookie: cookie.headers
            .getSetCookie()
            .find((c) => /^(__Host-)?hp_session=/.test(c))!
            .split(';')[0]!,
        },
      });
      expect(me.body.csrf_token).toBeTypeOf('string');
      noStore(me);
    });

    it('a site’s first permanent key, a new key and a temporary key', async () => {
      const owner = await invitedOwner(hp, `ns-keys-${backend}@example.com`);
      const created = await call(hp, 'POST', '/api/v1/account/sites', {
        json: { slug: `ns-keys-${backend.replace(/\W/g, '')}` },
        headers: owner.bearer,
      });
      expect(created.status).toBe(201);
      expect(created.body.api_key).toBeTypeOf('string');
      noStore(created);
      const siteId = (created.body.site as Json).id as number;
      const key = await call(hp, 'POST', `/api/v1/account/sites/${siteId}/keys`, { headers: owner.bearer });
      expect(key.status).toBe(201);
      expect(key.body.api_key).toBeTypeOf('string');
      noStore(key);
      const temp = await call(hp, 'POST', '/api/keys/generate-temp', {
        json: { storage_folder_id: siteId },
        headers: owner.bearer,
      });
      expect(temp.status).toBe(200);
      expect(temp.body.temp_api_key).toBeTypeOf('string');
      noStore(temp);
    });

    it('the TOTP secret, recovery codes, the second-factor challenge and its session', async () => {
      const owner = await invitedOwner(hp, `ns-totp-${backend}@example.com`);
      const setup = await call(hp, 'POST', '/api/v1/account/totp/setup', {
        json: { password: PASSWORD },
        headers: owner.bearer,
      });
      expect(setup.body.secret).toBeTypeOf('string');
      noStore(setup);
      const secret = setup.body.secret as string;
      const confirmed = await call(hp, 'POST', '/api/v1/account/totp/confirm', {
        json: { code: totpCode(secret) },
        headers: owner.bearer,
      });
      expect(confirmed.body.recovery_codes).toHaveLength(10);
      noStore(confirmed);
      const recovery = (confirmed.body.recovery_codes as string[])[0]!;
      const again = await call(hp, 'POST', '/api/v1/account/totp/recovery-codes', {
        json: { password: PASSWORD, recovery_code: recovery },
        headers: owner.bearer,
      });
      expect(again.status).toBe(200);
      noStore(again);
      const first = await call(hp, 'POST', '/api/v1/account/sign-in', {
        json: { email: owner.email, password: PASSWORD },
      });
      expect(first.body.challenge).toBeTypeOf('string');
      noStore(first);
      const second = await call(hp, 'POST', '/api/v1/account/sign-in/totp', {
        json: { challenge: first.body.challenge, recovery_code: (again.body.recovery_codes as string[])[0] },
      });
      expect(second.status).toBe(200);
      expect(second.body.token).toBeTypeOf('string');
      noStore(second);
    });

    it('a SQLite install’s token and an end user’s session', async () => {
      const site = await hp.createSite(`ns-sqlite-${backend.replace(/\W/g, '')}`);
      const api = sqliteApi(hp, site);
      const installed = await api.install({ path: 'data/app.sqlite', name: 'app' });
      expect(installed.status).toBe(200);
      noStore(installed);
      const token = installed.body.token as string;
      expect((await api.register(token, 'ann@example.com')).status).toBe(201);
      const login = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/login', {
        email: 'ann@example.com',
        password: 'correct horse battery',
      });
      expect(login.body.userToken).toBeTypeOf('string');
      noStore(login);
    });

    it('an MCP answer (sqlite_install hands out a token)', async () => {
      const site = await hp.createSite(`ns-mcp-${backend.replace(/\W/g, '')}`);
      const res = await fetch(`${hp.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
          authorization: `Bearer ${site.apiKey}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'sqlite_install',
            arguments: { path: 'data/mcp.sqlite', name: 'agent', requireUserAuth: false },
          },
        }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as Json;
      expect(body.result.isError).toBeUndefined();
      expect(res.headers.get('cache-control')).toBe('no-store');
    });
  });
});
