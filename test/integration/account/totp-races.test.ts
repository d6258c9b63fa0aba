import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { call, invitedOwner, PASSWORD } from '../../support/account-api.js';
import { enableTotp, totpCode, wrongCode } from '../../support/totp.js';

// The second step under concurrency: what a single-use rule means when requests arrive together
// (two replicas, or one client firing in parallel), on real PostgreSQL.
describe.each(backends)('two-factor sign-in under concurrency on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  const challengeOf = async (email: string) =>
    (await call(hp, 'POST', '/api/v1/account/sign-in', { json: { email, password: PASSWORD } })).body
      .challenge as string;
  const secondStep = (json: Record<string, string>) =>
    call(hp, 'POST', '/api/v1/account/sign-in/totp', { json });

  it('accepts one current code once, even sent on two challenges at the same moment', async () => {
    const owner = await invitedOwner(hp, `totp-race-code-${tag}@example.com`);
    const { secret } = await enableTotp(hp, owner.bearer);
    const [a, b] = await Promise.all([challengeOf(owner.email), challengeOf(owner.email)]);
    const code = totpCode(secret, 1); // the next step: the current one was used by confirm
    const answers = await Promise.all([
      secondStep({ challenge: a!, code }),
      secondStep({ challenge: b!, code }),
    ]);
    expect(answers.map((x) => x.status).sort()).toEqual([200, 403]);
  });

  it('accepts one recovery code once, and one challenge once, when sent together', async () => {
    const owner = await invitedOwner(hp, `totp-race-recovery-${tag}@example.com`);
    const { recoveryCodes } = await enableTotp(hp, owner.bearer);
    const [a, b] = await Promise.all([challengeOf(owner.email), challengeOf(owner.email)]);
    const sameCode = await Promise.all([
      secondStep({ challenge: a!, recovery_code: recoveryCodes[0]! }),
      secondStep({ challenge: b!, recovery_code: recoveryCodes[0]! }),
    ]);
    expect(sameCode.filter((x) => x.status === 200)).toHaveLength(1);
    const c = await challengeOf(owner.email);
    const sameChallenge = await Promise.all([
      secondStep({ challenge: c, recovery_code: recoveryCodes[1]! }),
      secondStep({ challenge: c, recovery_code: recoveryCodes[2]! }),
    ]);
    expect(sameChallenge.filter((x) => x.status === 200)).toHaveLength(1);
    // Two codes used (one each time): the losing request did not use up its own.
    const status = await call(hp, 'GET', '/api/v1/account/totp', { headers: owner.bearer });
    expect(status.body.recovery_codes_left).toBe(8);
  });

  it('checks no more than five codes of one challenge, however many arrive at once', async () => {
    const owner = await invitedOwner(hp, `totp-race-cap-${tag}@example.com`);
    const { secret } = await enableTotp(hp, owner.bearer); // two of the account's ten attempts
    const challenge = await challengeOf(owner.email);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => secondStep({ challenge, code: wrongCode(secret) })),
    );
    const errors = answers.map((x) => x.body.error);
    expect(errors.filter((e) => e === 'INVALID_TOTP_CODE')).toHaveLength(5);
    expect(errors.filter((e) => e === 'INVALID_CHALLENGE')).toHaveLength(3);
  });
});

describe.each(backends)('the second step of a sign-in with a made-up challenge on %s', (backend) => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  it('counts against the client address like every other attempt', async () => {
    const address = `198.51.100.${backend === 'postgres+s3' ? 21 : 22}`;
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      const answer = await call(hp, 'POST', '/api/v1/account/sign-in/totp', {
        json: { challenge: `hp_2fa_made-up-challenge-${i}`, code: '123456' },
        headers: { 'x-forwarded-for': address },
      });
      statuses.push(answer.status);
    }
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
    expect(statuses[20]).toBe(429);
  });
});
