import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { call, invitedOwner, PASSWORD } from '../../support/account-api.js';
import { enableTotp, totpCode } from '../../support/totp.js';

// The TOTP secret at rest (AES-256-GCM): a stored value whose authentication tag was cut short
// is refused, not decrypted (Node accepts tags of 4 to 16 bytes unless told the length).
describe.each(backends)('the stored TOTP secret on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  it('is not decrypted with a truncated authentication tag', async () => {
    const owner = await invitedOwner(hp, `totp-tag-${tag}@example.com`);
    const { secret } = await enableTotp(hp, owner.bearer);
    const db = hp.services.store.db;
    const { rows } = (await db.execute(
      sql`select t.account_id, t.secret_encrypted from account_totp t join accounts a on a.id = t.account_id where a.email = ${owner.email}`,
    )) as unknown as { rows: Array<{ account_id: number; secret_encrypted: string }> };
    const [version, iv, authTag, data] = rows[0]!.secret_encrypted.split('.');
    const short = Buffer.from(authTag!, 'base64url').subarray(0, 4).toString('base64url');
    await db.execute(
      sql`update account_totp set secret_encrypted = ${[version, iv, short, data].join('.')} where account_id = ${rows[0]!.account_id}`,
    );
    const first = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: { email: owner.email, password: PASSWORD },
    });
    const second = await call(hp, 'POST', '/api/v1/account/sign-in/totp', {
      json: { challenge: first.body.challenge as string, code: totpCode(secret, 1) },
    });
    expect(second.status).not.toBe(200);
    expect(second.body.token).toBeUndefined();
  });
});

// PostgreSQL only: the race needs a second connection holding the row while setup runs.
describe('setting up while another request turns TOTP on', () => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane('postgres+s3');
  });
  afterAll(() => hp?.stop());

  it('answers TOTP_ALREADY_ENABLED, never a secret that was not kept', async () => {
    const owner = await invitedOwner(hp, 'totp-setup-race@example.com');
    const setup = () =>
      call(hp, 'POST', '/api/v1/account/totp/setup', { json: { password: PASSWORD }, headers: owner.bearer });
    expect((await setup()).status).toBe(200);
    const db = hp.services.store.db;
    let pending: ReturnType<typeof setup> | undefined;
    let settled = false;
    await db.transaction(async (tx) => {
      // Turned on (as a confirm would) and held: setup reads "not on", then waits on the row.
      await tx.execute(
        sql`update account_totp set enabled_at = now() where account_id = (select id from accounts where email = ${owner.email})`,
      );
      pending = setup().finally(() => (settled = true));
      for (;;) {
        const { rows } = (await db.execute(
          sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike 'insert into "account_totp"%'`,
        )) as unknown as { rows: Array<{ n: number }> };
        if (rows[0]!.n > 0 || settled) break;
        await new Promise((resolve) => setTimeout(resolve, 20)); // polls the condition above
      }
    });
    const answer = await pending!;
    expect(answer.status).toBe(409);
    expect(answer.body.error).toBe('TOTP_ALREADY_ENABLED');
  });
});
