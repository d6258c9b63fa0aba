import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, forgetSiteKeys, humanMessage, siteCall } from '../../../console/src/api.js';
import { SLUG_RULE } from '../../../src/platform/slug.js';

// The console's temporary-key handling (console/src/api.ts) against a scripted fetch: which keys
// the "server" accepts is decided per test, and every mint is counted.

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

interface Server {
  mints: number;
  /** Keys the files API accepts. */
  accepted: Set<string>;
  /** The session is gone: the mint answers 401. */
  signedOut: boolean;
}

function serve(): Server {
  const server: Server = { mints: 0, accepted: new Set(), signedOut: false };
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string, init: RequestInit) => {
      const headers = init.headers as Record<string, string>;
      if (url === '/api/keys/generate-temp') {
        if (server.signedOut) return json(401, { error: 'UNAUTHORIZED', message: 'Sign in again.' });
        const key = `temp-${++server.mints}`;
        // Answer a tick later, so calls made together overlap with the mint.
        await new Promise((resolve) => setImmediate(resolve));
        return json(201, { temp_api_key: key, expires_at: new Date(Date.now() + 3_600_000).toISOString() });
      }
      const key = headers['x-api-key'] ?? '';
      if (!server.accepted.has(key)) return json(401, { error: 'INVALID_API_KEY', message: 'Invalid key.' });
      return json(200, { key });
    }),
  );
  return server;
}

describe('console site keys', () => {
  beforeEach(() => forgetSiteKeys());
  afterEach(() => vi.unstubAllGlobals());

  it('calls refused together share one new key', async () => {
    const server = serve();
    // The first key is refused (revoked, or expired early); the second is good.
    server.accepted.add('temp-2');
    const answers = await Promise.all(
      [1, 2, 3, 4].map(() => siteCall<{ key: string }>(7, 'GET', '/api/v1/files/list')),
    );
    expect(answers.map((a) => a.key)).toEqual(['temp-2', 'temp-2', 'temp-2', 'temp-2']);
    expect(server.mints).toBe(2);
  });

  it('a key kept refusing fails after one new key, without a loop', async () => {
    const server = serve();
    await expect(siteCall(7, 'GET', '/api/v1/files/list')).rejects.toMatchObject({ status: 401 });
    expect(server.mints).toBe(2);
  });

  it('an ended session fails the call after a single mint', async () => {
    const server = serve();
    server.signedOut = true;
    const calls = [1, 2, 3].map(() => siteCall(7, 'GET', '/api/v1/files/list'));
    for (const call of calls) await expect(call).rejects.toBeInstanceOf(ApiError);
    expect(server.mints).toBe(0);
    // Each refused mint is counted here (the scripted server counts only granted ones).
    const fetched = vi.mocked(fetch).mock.calls.filter(([url]) => url === '/api/keys/generate-temp');
    expect(fetched).toHaveLength(1);
  });
});

describe('the API’s words where a person reads (humanMessage)', () => {
  it('names fields in words, says what to do for a read-only token, keeps anything else', () => {
    expect(humanMessage('new_path must not be empty')).toBe('The new name cannot be empty.');
    expect(humanMessage('slug is required')).toBe('The subdomain is needed.');
    expect(humanMessage(SLUG_RULE)).toMatch(/^The subdomain can have lower-case letters/);
    expect(humanMessage('path must end in .sqlite or .db; name must not be empty')).toBe(
      'The path must end in .sqlite or .db. The name cannot be empty.',
    );
    expect(humanMessage('statements.0.sql must not be empty')).toBe('The statements #1 sql cannot be empty.');
    expect(humanMessage('This token is read-only.')).toMatch(/tick “Allow writes to this database”/);
    for (const kept of ['A site with this slug already exists.', 'no such table: fruit', 'Invalid API key'])
      expect(humanMessage(kept)).toBe(kept);
  });
});
