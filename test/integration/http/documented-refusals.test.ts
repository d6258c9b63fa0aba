import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostplane, type TestHostplane, type TestSite } from '../../support/hostplane.js';
import { call, invitedOwner } from '../../support/account-api.js';
import { deployClient, sha256 } from '../../support/deploys-api.js';

// The five schema-valid requests an outside Schemathesis pass saw refused with an undocumented 400:
// each is now either outside the document's schema (so a 400 is what it promises) or answered
// with a status the document lists for it, with that status's body.

type Json = Record<string, unknown>;
type Operation = {
  requestBody: { content: Record<string, { schema: Json }> };
  responses: Record<string, { content?: Record<string, { schema: Json }> }>;
};

/** A token of the shape the server mints (newSecret): prefix and 32 random bytes, base64url. */
const wellFormed = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;

describe('the document says what the server accepts', () => {
  let hp: TestHostplane;
  let doc: {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, Json> };
  };
  const op = (method: string, path: string) => doc.paths[path]![method]!;
  const bodySchema = (method: string, path: string) =>
    op(method, path).requestBody.content['application/json']!.schema;
  /** The component names of a response's body (one $ref, or anyOf of several). */
  const bodiesOf = (method: string, path: string, status: number): string[] => {
    const schema = op(method, path).responses[status]?.content?.['application/json']?.schema;
    if (!schema) return [];
    const refs = (schema.anyOf as Json[] | undefined) ?? [schema];
    return refs.map((r) => String(r.$ref).replace('#/components/schemas/', ''));
  };

  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
    doc = (await (await hp.request('/api/v1/openapi.json')).json()) as typeof doc;
  });
  afterAll(() => hp?.stop());

  const tokenRoutes = [
    {
      path: '/api/v1/account/invitations/accept',
      prefix: 'hp_invite_',
      extra: { password: 'a fine new passphrase' },
    },
    { path: '/api/v1/account/verify', prefix: 'hp_verify_', extra: {} },
    {
      path: '/api/v1/account/password-reset/confirm',
      prefix: 'hp_reset_',
      extra: { password: 'a fine new passphrase' },
    },
  ];

  it.each(tokenRoutes)(
    '$path: the token has a documented shape; an unknown one is 401 INVALID_TOKEN',
    async (r) => {
      const token = (bodySchema('post', r.path).properties as Record<string, Json>).token!;
      expect(token.pattern).toBeTypeOf('string');
      const pattern = new RegExp(token.pattern as string);
      const unknown = wellFormed(r.prefix);
      expect(pattern.test(unknown)).toBe(true);
      expect(pattern.test('x'.repeat(43))).toBe(false);
      expect(bodiesOf('post', r.path, 401)).toEqual(['INVALID_TOKEN_error']);
      expect(bodiesOf('post', r.path, 400)).not.toContain('INVALID_TOKEN_error');

      const answer = await call(hp, 'POST', r.path, { json: { token: unknown, ...r.extra } });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: 'INVALID_TOKEN' });
      expect(answer.body.message).toMatch(/invalid, expired or already used/);
      // A common password with an unknown token: the credential is judged first.
      if ('password' in r.extra) {
        const common = await call(hp, 'POST', r.path, {
          json: { token: wellFormed(r.prefix), password: 'password' },
        });
        expect(common.status).toBe(401);
      }
      // Another shape is outside the document: a 400 that says what is wrong.
      const bad = await call(hp, 'POST', r.path, { json: { token: 'x'.repeat(43), ...r.extra } });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ error: 'Bad Request' });
      expect(bad.body.message).toMatch(new RegExp(`token is not the token of .* link.*${r.prefix}`));
    },
  );

  it('a form notification link: documented shape, an unknown one is 401 INVALID_TOKEN', async () => {
    const path = '/api/v1/forms/notification-confirm';
    const token = (bodySchema('post', path).properties as Record<string, Json>).token!;
    expect(new RegExp(token.pattern as string).test(randomBytes(32).toString('base64url'))).toBe(true);
    const answer = await call(hp, 'POST', path, { json: { token: randomBytes(32).toString('base64url') } });
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ error: 'INVALID_TOKEN', reason: 'unknown' });
    expect(bodiesOf('post', path, 401)).toEqual(['NOTIFICATION_LINK_INVALID_error']);
  });

  it.each([
    ['/api/v1/account/sign-in/totp', 'code', 'recovery_code'],
    ['/api/v1/account/totp/disable', 'code', 'recovery_code'],
    ['/api/v1/account/totp/recovery-codes', 'code', 'recovery_code'],
    ['/api/v1/account/sudo', 'password', 'code'],
  ])('%s: exactly one of %s and %s, as oneOf', (path, a, b) => {
    const schema = bodySchema('post', path);
    const branches = schema.oneOf as Array<{ properties: Record<string, Json>; required: string[] }>;
    expect(branches).toHaveLength(2);
    expect(branches[0]!.required).toContain(a);
    expect(branches[0]!.properties[b]).toEqual({ not: {} });
    expect(branches[1]!.required).toContain(b);
    expect(branches[1]!.properties[a]).toEqual({ not: {} });
  });

  it('sign-in/totp with both a code and a recovery code is refused as the schema refuses it', async () => {
    const both = await call(hp, 'POST', '/api/v1/account/sign-in/totp', {
      json: { challenge: 'hp_2fa_whatever', code: '123456', recovery_code: 'abcde-fghij' },
    });
    expect(both.status).toBe(400);
    expect(both.body.message).toBe('send either `code` or `recovery_code`, not both');
    const neither = await call(hp, 'POST', '/api/v1/account/sign-in/totp', { json: { challenge: 'c' } });
    expect(neither.body.message).toBe('send either `code` or `recovery_code`');
    // A body that chose one is told what else is wrong with it.
    const noChallenge = await call(hp, 'POST', '/api/v1/account/sign-in/totp', { json: { code: '123456' } });
    expect(noChallenge.body.message).toBe('challenge is required');
    const owner = await invitedOwner(hp, 'sudo-both@example.com');
    const sudo = await call(hp, 'POST', '/api/v1/account/sudo', {
      headers: owner.bearer,
      json: { password: 'x', code: '123456' },
    });
    expect(sudo.status).toBe(400);
    expect(sudo.body.message).toBe('send either `password` or `code`, not both');
  });

  it('a deploy blob of other bytes: the documented 400 Hash mismatch, with its body', async () => {
    const path = '/api/v1/deploys/{id}/files/{sha256}';
    expect(bodiesOf('put', path, 400)).toContain('HASH_MISMATCH_error');
    const mismatch = doc.components.schemas.HASH_MISMATCH_error as { properties: Record<string, Json> };
    expect(Object.keys(mismatch.properties)).toEqual(
      expect.arrayContaining(['error', 'message', 'expected', 'actual']),
    );
    const site: TestSite = await hp.createSite('hash-mismatch');
    const client = deployClient(hp.port, site.apiKey);
    const { id } = await client.create({ 'index.html': sha256('<p>right</p>') });
    const answer = await client.put(id, sha256('<p>right</p>'), '<p>wrong</p>');
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      error: 'Hash mismatch',
      expected: sha256('<p>right</p>'),
      actual: sha256('<p>wrong</p>'),
    });
  });
});
