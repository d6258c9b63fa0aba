import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { call, invitedOwner, type Answer } from '../../support/account-api.js';

/** What a client can compare between two answers: status, body and the headers that are not per-request. */
const visible = (a: Answer) => ({
  status: a.status,
  body: a.body,
  headers: [...a.headers.keys()].filter((k) => !['date', 'x-request-id', 'traceparent'].includes(k)).sort(),
});

const unusedResetTokens = async (hp: TestHostplane, email: string) => {
  const { rows } = (await hp.services.store.db.execute(
    sql`select count(*)::int as n from account_tokens t join accounts a on a.id = t.account_id
        where a.email = ${email} and t.kind = 'reset' and t.used_at is null`,
  )) as unknown as { rows: Array<{ n: number }> };
  return rows[0]!.n;
};

describe.each(backends)('account answers that reveal no address on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend, { env: { HOSTPLANE_SIGNUP: 'open' } });
  });
  afterAll(() => hp?.stop());

  it('answers a reset request for a known and an unknown address alike', async () => {
    const { email } = await invitedOwner(hp, `known-${tag}@example.com`);
    const known = await call(hp, 'POST', '/api/v1/account/password-reset', { json: { email } });
    const unknown = await call(hp, 'POST', '/api/v1/account/password-reset', {
      json: { email: `unknown-${tag}@example.com` },
    });
    expect(known.status).toBe(202);
    expect(visible(unknown)).toEqual(visible(known));
    // The work follows the answer.
    await eventually('the reset link', async () => (await unusedResetTokens(hp, email)) === 1);
  });

  // PostgreSQL only (registered there, not skipped here): another connection holds the account
  // row while the request is answered; PGlite has one connection.
  if (backend === 'postgres+s3')
    it('answers a reset request before any work on the account (the answer cannot time it)', async () => {
      const { email } = await invitedOwner(hp, `locked-${tag}@example.com`);
      // The account row is held by another transaction: the work waits, the answer does not.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const locked = new Promise<void>((lockedResolve) => {
        void hp.services.store.db.transaction(async (tx) => {
          await tx.execute(sql`select id from accounts where email = ${email} for update`);
          lockedResolve();
          await held;
        });
      });
      await locked;
      const answer = await call(hp, 'POST', '/api/v1/account/password-reset', { json: { email } });
      expect(answer.status).toBe(202);
      expect(await unusedResetTokens(hp, email)).toBe(0);
      release();
      await eventually(
        'the reset link once the row is free',
        async () => (await unusedResetTokens(hp, email)) === 1,
      );
    });

  it('answers open sign-up for a taken address exactly as for a free one', async () => {
    const { email } = await invitedOwner(hp, `taken-${tag}@example.com`);
    const taken = await call(hp, 'POST', '/api/v1/account/sign-up', {
      json: { email, password: 'a fine new passphrase 3' },
    });
    const free = await call(hp, 'POST', '/api/v1/account/sign-up', {
      json: { email: `free-${tag}@example.com`, password: 'a fine new passphrase 3' },
    });
    expect(free.status).toBe(202);
    expect(visible(taken)).toEqual(visible(free));
    // The taken account is untouched: its owner's password still signs in.
    expect(
      (
        await call(hp, 'POST', '/api/v1/account/sign-in', {
          json: { email, password: 'a fine new passphrase 3' },
        })
      ).status,
    ).toBe(401);
  });
});
