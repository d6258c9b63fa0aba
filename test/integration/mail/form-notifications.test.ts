import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually, eventuallyPasses } from '../../support/eventually.js';
import { contactFields, formsApi, type FormsApi, type Json } from '../../support/forms-api.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { listMessages, readHeaders, readMessage } from '../../support/mailpit.js';

describe.each(backends)('form notification mail through real SMTP (Mailpit) on %s', (backend) => {
  const mailpit = inject('mailpit');
  let hp: TestHostplane;
  let api: FormsApi;
  let owner: string;
  beforeAll(async () => {
    hp = await startHostplane(backend, {
      worker: true,
      env: { SMTP_URL: mailpit.smtpUrl, MAIL_FROM: 'Hostplane <noreply@hostplane.test>' },
    });
    const site = await hp.createSite(`mail-${backend.replace(/\W/g, '')}`);
    owner = site.email;
    api = formsApi(hp, site);
  });
  afterAll(() => hp?.stop());

  it('mails the owner every field of an accepted submission, escaped, with Reply-To the submitter', async () => {
    const form = await api.createOk({ name: 'Contact <b>us</b>', fields: contactFields });
    const res = await api.submit(form.uuid, {
      name: 'Ann <script>alert(1)</script>',
      email: 'ann@example.com',
      topic: 'Support',
      message: 'Line one\nLine two & more',
    });
    expect(res.status).toBe(201);
    const [summary] = await eventually('the notification mail', async () => {
      const found = await listMessages(mailpit, owner);
      return found.length === 1 ? found : undefined;
    });
    expect(summary!.Subject).toBe('New submission: Contact <b>us</b>');
    expect(summary!.ReplyTo.map((a) => a.Address)).toEqual(['ann@example.com']);
    const message = await readMessage(mailpit, summary!.ID);
    for (const value of ['Ann <script>alert(1)</script>', 'ann@example.com', 'Support', 'Line two & more'])
      expect(message.Text).toContain(value);
    expect(message.HTML).toContain('Ann &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(message.HTML).not.toContain('<script>');
    const headers = await readHeaders(mailpit, summary!.ID);
    expect(headers['Message-Id']?.[0] ?? headers['Message-ID']?.[0]).toMatch(
      /^<submission-[0-9a-f-]{36}@localhost>$/,
    );
  });

  it('does not mail spam, and mails the form’s notification address when set and confirmed', async () => {
    const team = `team-${backend.replace(/\W/g, '')}@example.com`;
    const form = await api.createOk({ name: 'Second', fields: contactFields, notification_email: team });
    // A new address gets its confirmation link first (test/integration/forms/notification-addresses.test.ts).
    const [confirmation] = await eventually('the confirmation link', async () => {
      const found = (await listMessages(mailpit, team)).filter((m) => m.Subject.startsWith('Confirm'));
      return found.length === 1 ? found : undefined;
    });
    const token = (await readMessage(mailpit, confirmation!.ID)).Text.match(/#token=([\w-]+)/)?.[1];
    const confirmed = await hp.request('/api/v1/forms/notification-confirm', {
      method: 'POST',
      json: { token },
    });
    expect(confirmed.status).toBe(200);
    await api.submit(form.uuid, { name: 'Bot', email: 'bot@example.com' }, { trap: 'filled' });
    const ok = await api.submit(form.uuid, { name: 'Bea', email: 'bea@example.com' });
    expect(ok.status).toBe(201);
    await eventuallyPasses('the mail to the notification address', async () =>
      expect(
        (await listMessages(mailpit, team)).filter((m) => m.Subject.startsWith('New submission')),
      ).toHaveLength(1),
    );
    const list = await api.call('GET', `/api/v1/forms/${form.id}/submissions`);
    expect(list.body.stats).toMatchObject({ total: 2, spam: 1 });
    const all = await listMessages(mailpit);
    expect(all.some((m: Json) => JSON.stringify(m).includes('bot@example.com'))).toBe(false);
  });
});
