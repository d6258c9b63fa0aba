import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { listMessages, readMessage } from '../../support/mailpit.js';
import { call, PASSWORD, tokenOf } from '../../support/account-api.js';

/** The console link of the newest mail to `to` with `subject`. */
async function mailedLink(to: string, subject: string): Promise<string> {
  const mailpit = inject('mailpit');
  const summary = await eventually(`the mail "${subject}" to ${to}`, async () =>
    (await listMessages(mailpit, to)).find((m) => m.Subject === subject),
  );
  const message = await readMessage(mailpit, summary.ID);
  const link = message.Text.match(/http:\/\/localhost:8080\/console\/\w+#token=[\w-]+/)?.[0];
  if (!link) throw new Error(`no link in ${message.Text}`);
  expect(message.HTML).toContain(link);
  return link;
}

describe.each(backends)('account mail through real SMTP (Mailpit) on %s', (backend) => {
  const mailpit = inject('mailpit');
  const tag = backend.replace(/\W/g, '');
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane(backend, {
      worker: true,
      env: {
        SMTP_URL: mailpit.smtpUrl,
        MAIL_FROM: 'Hostplane <noreply@hostplane.test>',
        HOSTPLANE_SIGNUP: 'open',
      },
    });
  });
  afterAll(() => hp?.stop());

  it('mails an invitation whose link sets the password', async () => {
    const email = `mail-invite-${tag}@example.com`;
    const invited = await hp.services.platform.accounts.invite({ email });
    expect(invited.mailed).toBe(true);
    const link = await mailedLink(email, 'You are invited to Hostplane');
    expect(link).toBe(invited.link);
    // Once sent, the outbox keeps no copy of the one-time link (its bodies are blanked).
    const token = tokenOf(link);
    const stored = await eventually('the invitation marked sent', async () => {
      const { rows } = (await hp.services.store.db.execute(
        sql`select status, text, html from mail_outbox where recipient = ${email}`,
      )) as unknown as { rows: Array<{ status: string; text: string; html: string | null }> };
      return rows.length === 1 && rows[0]!.status === 'sent' ? rows[0] : undefined;
    });
    expect(stored.text).not.toContain(token);
    expect(stored.html ?? '').not.toContain(token);
    const accepted = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(link), password: PASSWORD },
    });
    expect(accepted.status).toBe(200);
  });

  it('open sign-up: no site before the mailed verification link is followed', async () => {
    const email = `mail-signup-${tag}@example.com`;
    const signUp = await call(hp, 'POST', '/api/v1/account/sign-up', { json: { email, password: PASSWORD } });
    expect(signUp.status).toBe(202);
    // Signing up again with a taken address answers the same, and mails nothing more.
    const again = await call(hp, 'POST', '/api/v1/account/sign-up', { json: { email, password: PASSWORD } });
    expect(again.body).toEqual(signUp.body);
    const session = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: { email, password: PASSWORD },
    });
    const auth = { authorization: `Bearer ${session.body.token as string}` };
    const early = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: `early-${tag}` },
      headers: auth,
    });
    expect(early.status).toBe(403);
    expect(early.body.error).toBe('EMAIL_NOT_VERIFIED');
    const link = await mailedLink(email, 'Confirm your email address');
    expect(link).toContain('/console/verify#token=');
    expect(
      (await call(hp, 'POST', '/api/v1/account/verify', { json: { token: tokenOf(link) } })).status,
    ).toBe(200);
    const site = await call(hp, 'POST', '/api/v1/account/sites', {
      json: { slug: `verified-${tag}` },
      headers: auth,
    });
    expect(site.status).toBe(201);
    expect(
      (await listMessages(mailpit, email)).filter((m) => m.Subject === 'Confirm your email address'),
    ).toHaveLength(1);
  });

  it('mails a one-hour reset link that works once and ends every session', async () => {
    const email = `mail-reset-${tag}@example.com`;
    const invited = await hp.services.platform.accounts.invite({ email });
    const accepted = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
      json: { token: tokenOf(invited.link), password: PASSWORD },
    });
    const auth = { authorization: `Bearer ${accepted.body.token as string}` };
    expect((await call(hp, 'POST', '/api/v1/account/password-reset', { json: { email } })).status).toBe(202);
    const link = await mailedLink(email, 'Reset your Hostplane password');
    const message = await readMessage(
      mailpit,
      (await listMessages(mailpit, email)).find((m) => m.Subject.startsWith('Reset'))!.ID,
    );
    const until = Date.parse(message.Text.match(/until (\S+)\./)![1]!);
    expect(until - Date.now()).toBeGreaterThan(55 * 60_000);
    expect(until - Date.now()).toBeLessThanOrEqual(60 * 60_000);
    const confirm = () =>
      call(hp, 'POST', '/api/v1/account/password-reset/confirm', {
        json: { token: tokenOf(link), password: 'a whole new passphrase' },
      });
    expect((await confirm()).status).toBe(200);
    expect((await confirm()).body.error).toBe('INVALID_TOKEN');
    expect((await call(hp, 'GET', '/api/v1/account', { headers: auth })).status).toBe(401);
    const signIn = await call(hp, 'POST', '/api/v1/account/sign-in', {
      json: { email, password: 'a whole new passphrase' },
    });
    expect(signIn.status).toBe(200);
  });

  it('mails the owner of a taken address a note when someone signs up with it (the visitor learns nothing)', async () => {
    const email = `mail-taken-${tag}@example.com`;
    await hp.services.platform.accounts.invite({ email });
    const res = await call(hp, 'POST', '/api/v1/account/sign-up', {
      json: { email, password: 'somebody else entirely 5' },
    });
    expect(res.status).toBe(202);
    const summary = await eventually('the note to the owner', async () =>
      (await listMessages(mailpit, email)).find(
        (m) => m.Subject === 'Someone tried to sign up with your address',
      ),
    );
    const message = await readMessage(mailpit, summary.ID);
    expect(message.Text).toContain('http://localhost:8080/console/forgot');
    expect(message.Text).not.toContain('#token=');
  });
});
