import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../../src/platform/secrets.js';
import { call as http, invitedOwner, PASSWORD } from '../../support/account-api.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { connect, fails, ok } from './support.js';

// Issue 28: the MCP tools run the public API in-process, so sqlite_install with a temporary key
// whose session is not in sudo mode gets the API's 403 SUDO_REQUIRED, with a hint that tells the
// agent what the user must do (docs/developers/security.md "Sudo mode").
describe('MCP: sqlite_install with a temporary key needs its session in sudo mode', () => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs');
  });
  afterAll(() => hp?.stop());

  it('answers SUDO_REQUIRED with a hint to confirm the password, then installs once it is confirmed', async () => {
    const owner = await invitedOwner(hp, 'mcp-sudo@example.com');
    const created = await http(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: 'mcp-sudo' },
      headers: owner.bearer,
    });
    expect(created.status).toBe(201);
    await hp.services.store.db.execute(
      sql`update account_sessions set confirmed_at = now() - interval '16 minutes'
          where token_hash = ${hashSecret(owner.token)}`,
    );
    const minted = await http(hp, 'POST', '/api/keys/generate-temp', {
      json: { storage_folder_id: created.body.site.id },
      headers: owner.bearer,
    });
    const client = await connect(hp.url, { key: minted.body.temp_api_key as string });
    try {
      const args = { path: 'data/app.sqlite', name: 'agent', requireUserAuth: false };
      const refused = await fails(client, 'sqlite_install', args);
      expect(refused).toMatchObject({ status: 403, error: 'SUDO_REQUIRED' });
      expect(refused.hint_for_ai).toMatch(/password/i);
      expect(refused.hint_for_ai).toMatch(/console/);
      expect(refused.hint_for_ai).toMatch(/POST \/api\/v1\/account\/sudo/);
      // Reading stays open to the key.
      expect((await ok(client, 'get_usage')).plan).toBeDefined();

      const confirmed = await http(hp, 'POST', '/api/v1/account/sudo', {
        json: { password: PASSWORD },
        headers: owner.bearer,
      });
      expect(confirmed.status).toBe(200);
      expect((await ok(client, 'sqlite_install', args)).token).toMatch(/^hp_sqlite_/);
    } finally {
      await client.close();
    }
  });
});
