import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../../src/platform/accounts.js';
import {
  backends,
  metricValue,
  scrapeMetrics,
  startHostplane,
  type TestHostplane,
} from '../../support/hostplane.js';
import { call, PASSWORD, tokenOf, type Answer } from '../../support/account-api.js';
import { sqliteApi } from '../../support/sqlite-api.js';

// docs/developers/security.md "Passwords": NIST SP 800-63B's repetitive, sequential and context-specific passwords are
// refused wherever a password is set, for accounts and for SQLite end users.

const refused = (answer: Answer, rule: RegExp) => {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400);
  expect(answer.body.error).toBe('PASSWORD_TOO_COMMON');
  expect(answer.body.message).toMatch(rule);
};
const REPEATED = /repeated/;
const SEQUENCE = /sequence/;
const CONTEXT = /email address, the site’s name or the service’s name/;

describe.each(backends)('password policy through the server on %s', (backend) => {
  let hp: TestHostplane;
  const tag = backend.replace(/\W/g, '');
  beforeAll(async () => {
    hp = await startHostplane(backend, { env: { HOSTPLANE_SIGNUP: 'open' } });
  });
  afterAll(() => hp?.stop());

  it('refuses the email, aaaaaaaa, abcdefgh and hostplane2026 at sign-up', async () => {
    const email = `signup-${tag}@example.com`;
    const signUp = (password: string) =>
      call(hp, 'POST', '/api/v1/account/sign-up', { json: { email, password } });
    refused(await signUp(email), CONTEXT);
    refused(await signUp(`Signup-${tag}2026`), CONTEXT);
    refused(await signUp('aaaaaaaa'), REPEATED);
    refused(await signUp('abcdefgh'), SEQUENCE);
    refused(await signUp('hostplane2026'), CONTEXT);
    expect((await signUp(PASSWORD)).status).toBe(202);
    const metrics = await scrapeMetrics(hp);
    for (const rule of ['context', 'repetitive', 'sequential'])
      expect(metricValue(metrics, 'hostplane_passwords_refused_total', { rule }), rule).toBeGreaterThan(0);
  });

  it('refuses them on invitation accept, reset confirm and password change (the site’s slug too)', async () => {
    const email = `weakling-${tag}@example.com`;
    const links: string[] = [];
    const mailing = new Accounts(hp.services.store.db, {
      baseUrl: 'http://localhost:8080',
      mailer: async (_tx, mail) => void links.push(mail.link),
    });
    const invited = await mailing.invite({ email });
    const accept = (password: string) =>
      call(hp, 'POST', '/api/v1/account/invitations/accept', {
        json: { token: tokenOf(invited.link), password },
      });
    refused(await accept(email), CONTEXT);
    refused(await accept('weakling-2026'), CONTEXT);
    refused(await accept('hostplane2026'), CONTEXT);
    const accepted = await accept(PASSWORD);
    expect(accepted.status).toBe(200);
    const auth = { authorization: `Bearer ${accepted.body.token as string}` };

    const slug = `gardenparty-${tag}`;
    expect((await call(hp, 'POST', '/api/v1/account/sites', { json: { slug }, headers: auth })).status).toBe(
      201,
    );
    const change = (password: string) =>
      call(hp, 'POST', '/api/v1/account/password', {
        json: { current_password: PASSWORD, new_password: password },
        headers: auth,
      });
    refused(await change(email), CONTEXT);
    refused(await change('abcdefgh'), SEQUENCE);
    refused(await change(`${slug}!`), CONTEXT);
    refused(await change('GardenParty99'), CONTEXT);

    await mailing.requestReset(email);
    const confirm = (password: string) =>
      call(hp, 'POST', '/api/v1/account/password-reset/confirm', {
        json: { token: tokenOf(links.at(-1)!), password },
      });
    refused(await confirm(email), CONTEXT);
    refused(await confirm('aaaaaaaa'), REPEATED);
    refused(await confirm('gardenparty1'), CONTEXT);
    expect((await confirm('a brand new passphrase')).status).toBe(200);
  });

  it('refuses an end user’s password built on the site’s slug, the email or a pattern', async () => {
    const site = await hp.createSite(`moonbakery${tag}`);
    const api = sqliteApi(hp, site);
    const token = await api.token();
    const register = (email: string, password: string) => api.register(token, email, password);
    refused(await register('baker@example.com', `moonbakery${tag}`), CONTEXT);
    refused(await register('baker@example.com', `MoonBakery${tag}1`), CONTEXT);
    refused(await register('baker@example.com', 'baker@example.com'), CONTEXT);
    refused(await register('baker@example.com', 'hostplane2026'), CONTEXT);
    refused(await register('baker@example.com', 'wertyuio'), SEQUENCE); // a keyboard run
    expect((await register('baker@example.com', 'correct horse battery')).status).toBe(201);

    const session = await api.login(token, 'baker@example.com');
    const change = await api.scoped(
      token,
      'POST',
      '/api/v1/sqlite/auth/change-password',
      { currentPassword: 'correct horse battery', newPassword: `moonbakery${tag}!!` },
      { 'x-sqlite-user-token': session },
    );
    refused(change, CONTEXT);
    const users = await api.scoped(token, 'GET', '/api/v1/sqlite/auth/users', undefined, api.master);
    const id = (users.body.users as Array<{ id: number }>)[0]!.id;
    const reset = await api.scoped(
      token,
      'POST',
      `/api/v1/sqlite/auth/users/${id}/reset-password`,
      { newPassword: 'baker@example.com' },
      api.master,
    );
    refused(reset, CONTEXT);
  });
});
