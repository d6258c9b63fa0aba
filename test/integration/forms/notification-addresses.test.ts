import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { call, invitedOwner, tokenOf } from '../../support/account-api.js';
import { eventually } from '../../support/eventually.js';
import { contactFields, formsApi, type Json } from '../../support/forms-api.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';
import { listMessages, readMessage, type MailpitEnv } from '../../support/mailpit.js';

const CONFIRM_SUBJECT = 'Confirm this address for form submissions';

/** The mails the outbox holds for `to` (sent or not), by kind: what a submission queued, at once. */
async function outboxKinds(hp: TestHostplane, to: string): Promise<string[]> {
  const result = (await hp.services.store.db.execute(
    sql`select kind from mail_outbox where lower(recipient) = lower(${to}) order by id`,
  )) as unknown as { rows: Array<{ kind: string }> };
  return result.rows.map((r) => r.kind);
}

/** The confirmation links mailed to `to`, newest first, once at least `count` arrived. */
async function confirmLinks(mailpit: MailpitEnv, to: string, count = 1): Promise<string[]> {
  const found = await eventually(`${count} confirmation mail(s) to ${to}`, async () => {
    const mails = (await listMessages(mailpit, to)).filter((m) => m.Subject === CONFIRM_SUBJECT);
    return mails.length >= count ? mails : undefined;
  });
  const links: string[] = [];
  for (const summary of found) {
    const message = await readMessage(mailpit, summary.ID);
    const link = message.Text.match(/https?:\/\/\S+\/console\/confirm-notification#token=[\w-]+/)?.[0];
    if (!link) throw new Error(`no confirmation link in: ${message.Text}`);
    links.push(link);
  }
  return links;
}

async function submissionMails(mailpit: MailpitEnv, to: string): Promise<number> {
  return (await listMessages(mailpit, to)).filter((m) => m.Subject.startsWith('New submission:')).length;
}

describe.each(backends)('form notification addresses are confirmed before they get mail on %s', (backend) => {
  const mailpit = inject('mailpit');
  const tag = backend.replace(/\W/g, '');
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane(backend, {
      worker: true,
      env: { SMTP_URL: mailpit.smtpUrl, MAIL_FROM: 'Hostplane <noreply@hostplane.test>' },
    });
  });
  afterAll(() => hp?.stop());

  const confirm = (token: unknown) =>
    call(hp, 'POST', '/api/v1/forms/notification-confirm', { json: { token } });

  it('mails a stranger’s address a link instead of the submissions, and the submissions once it is followed', async () => {
    const site = await hp.createSite(`nstranger-${tag}`, { plan: 'standard' });
    const api = formsApi(hp, site);
    const stranger = `stranger-${tag}@example.net`;
    const form = await api.createOk({ name: 'Contact', fields: contactFields, notification_email: stranger });
    expect(form).toMatchObject({ notification_email: stranger, notification_email_status: 'pending' });

    expect((await api.submit(form.uuid, { name: 'Ann', email: 'ann@example.com' })).status).toBe(201);
    // The submission is stored, and nothing was queued for the unconfirmed address but the link.
    const listed = await api.call('GET', `/api/v1/forms/${form.id}/submissions`);
    expect(listed.body.stats.total).toBe(1);
    expect(await outboxKinds(hp, stranger)).toEqual(['form_notification_confirm']);

    const [link] = await confirmLinks(mailpit, stranger);
    expect(link!.startsWith(`${hp.config.baseUrl}/console/confirm-notification#token=`)).toBe(true);
    const mails = (await listMessages(mailpit, stranger)).filter((m) => m.Subject === CONFIRM_SUBJECT);
    const text = (await readMessage(mailpit, mails[0]!.ID)).Text;
    expect(text).toContain('"Contact"');
    expect(text).toContain(site.email);

    const confirmed = await confirm(tokenOf(link!));
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ success: true, email: stranger });
    expect((await api.call('GET', `/api/v1/forms/${form.id}`)).body.form.notification_email_status).toBe(
      'confirmed',
    );

    expect((await api.submit(form.uuid, { name: 'Bea', email: 'bea@example.com' })).status).toBe(201);
    await eventually('the submission mail to the confirmed address', async () =>
      (await submissionMails(mailpit, stranger)) === 1 ? true : undefined,
    );
    // The earlier submission is not mailed after the fact: only the one after confirmation was queued.
    expect(await outboxKinds(hp, stranger)).toEqual(['form_notification_confirm', 'form_submission']);

    // Confirmed for the account: another form of it uses the address at once, with no new link.
    const second = await api.createOk({
      name: 'Second',
      fields: contactFields,
      notification_email: stranger.toUpperCase(),
    });
    expect(second.notification_email_status).toBe('confirmed');
    expect((await outboxKinds(hp, stranger)).filter((k) => k === 'form_notification_confirm')).toHaveLength(
      1,
    );
  });

  it('mails the account’s own verified address at once, without a link', async () => {
    const site = await hp.createSite(`nown-${tag}`);
    const api = formsApi(hp, site);
    const form = await api.createOk({
      name: 'Own',
      fields: contactFields,
      notification_email: site.email.toUpperCase(),
    });
    expect(form.notification_email_status).toBe('confirmed');
    const byDefault = await api.createOk({ name: 'Default', fields: contactFields });
    expect(byDefault).toMatchObject({ notification_email: null, notification_email_status: 'confirmed' });
    expect((await api.submit(form.uuid, { name: 'Cy', email: 'cy@example.com' })).status).toBe(201);
    await eventually('the submission mail to the owner', async () =>
      (await submissionMails(mailpit, site.email)) === 1 ? true : undefined,
    );
    expect(await outboxKinds(hp, site.email)).toEqual(['form_submission']);
  });

  it('refuses a used, an expired and an unknown link in words, and changes nothing', async () => {
    const site = await hp.createSite(`nlinks-${tag}`, { plan: 'standard' });
    const api = formsApi(hp, site);
    const once = `once-${tag}@example.net`;
    await api.createOk({ name: 'Once', fields: contactFields, notification_email: once });
    const token = tokenOf((await confirmLinks(mailpit, once))[0]!);
    expect((await confirm(token)).status).toBe(200);
    const again = await confirm(token);
    expect(again.status).toBe(401);
    expect(again.body).toMatchObject({ error: 'INVALID_TOKEN', reason: 'used' });
    expect(again.body.message).toMatch(/already used/);

    const late = `late-${tag}@example.net`;
    const lateForm = await api.createOk({ name: 'Late', fields: contactFields, notification_email: late });
    const lateToken = tokenOf((await confirmLinks(mailpit, late))[0]!);
    await hp.services.store.db.execute(
      sql`update form_notification_addresses set token_expires_at = now() - interval '1 minute' where email = ${late}`,
    );
    const expired = await confirm(lateToken);
    expect(expired.status).toBe(401);
    expect(expired.body).toMatchObject({ error: 'INVALID_TOKEN', reason: 'expired' });
    expect(expired.body.message).toMatch(/expired/);
    expect((await api.call('GET', `/api/v1/forms/${lateForm.id}`)).body.form.notification_email_status).toBe(
      'pending',
    );

    const unknown = await confirm('x'.repeat(43));
    expect(unknown.status).toBe(401);
    expect(unknown.body).toMatchObject({ error: 'INVALID_TOKEN', reason: 'unknown' });
    expect((await confirm(42)).status).toBe(400);
    // JSON only: a cross-site page cannot post it without a preflight.
    const plain = await hp.request('/api/v1/forms/notification-confirm', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ token: lateToken }),
    });
    expect(plain.status).toBe(415);
  });

  it('confirms an address for the account whose link it is, never for another account', async () => {
    const shared = `shared-${tag}@example.net`;
    const siteA = await hp.createSite(`nshareda-${tag}`);
    const siteB = await hp.createSite(`nsharedb-${tag}`);
    const apiA = formsApi(hp, siteA);
    const apiB = formsApi(hp, siteB);
    const formA = await apiA.createOk({ name: 'A', fields: contactFields, notification_email: shared });
    const [linkA] = await confirmLinks(mailpit, shared, 1);
    const formB = await apiB.createOk({ name: 'B', fields: contactFields, notification_email: shared });
    const links = await confirmLinks(mailpit, shared, 2);
    const linkB = links.find((l) => l !== linkA)!;

    expect((await confirm(tokenOf(linkA!))).status).toBe(200);
    expect((await apiA.call('GET', `/api/v1/forms/${formA.id}`)).body.form.notification_email_status).toBe(
      'confirmed',
    );
    expect((await apiB.call('GET', `/api/v1/forms/${formB.id}`)).body.form.notification_email_status).toBe(
      'pending',
    );
    expect((await apiB.submit(formB.uuid, { name: 'Dee', email: 'dee@example.com' })).status).toBe(201);
    expect((await outboxKinds(hp, shared)).filter((k) => k === 'form_submission')).toEqual([]);
    // B's own link still confirms B's use of it.
    expect((await confirm(tokenOf(linkB))).status).toBe(200);
    expect((await apiB.call('GET', `/api/v1/forms/${formB.id}`)).body.form.notification_email_status).toBe(
      'confirmed',
    );
  });

  it('resends a new link on request, throttled, and caps the addresses waiting per account', async () => {
    const site = await hp.createSite(`nresend-${tag}`);
    const api = formsApi(hp, site);
    const slow = `slow-${tag}@example.net`;
    const form = await api.createOk({ name: 'Resend', fields: contactFields, notification_email: slow });
    const [first] = await confirmLinks(mailpit, slow, 1);
    const resent = await api.call('POST', `/api/v1/forms/${form.id}/notification-email/resend`);
    expect(resent.status).toBe(202);
    expect(resent.body).toMatchObject({ success: true, notification_email_status: 'pending' });
    const [newest] = await confirmLinks(mailpit, slow, 2);
    expect(newest).not.toBe(first);
    // The earlier link stops working once a new one is mailed.
    expect((await confirm(tokenOf(first!))).body.reason).toBe('unknown');
    expect((await api.call('POST', `/api/v1/forms/${form.id}/notification-email/resend`)).status).toBe(202);
    const limited = await api.call('POST', `/api/v1/forms/${form.id}/notification-email/resend`);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);

    // Ten addresses waiting is the cap: the eleventh is refused and the form keeps its address.
    for (let i = 2; i <= 10; i++) {
      const res = await api.call('PUT', `/api/v1/forms/${form.id}`, {
        notification_email: `wait${i}-${tag}@example.net`,
      });
      expect(res.status, `address ${i}`).toBe(200);
    }
    const over = await api.call('PUT', `/api/v1/forms/${form.id}`, {
      notification_email: `wait11-${tag}@example.net`,
    });
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({ error: 'LIMIT_REACHED', limit: 10 });
    expect((await api.call('GET', `/api/v1/forms/${form.id}`)).body.form.notification_email).toBe(
      `wait10-${tag}@example.net`,
    );
    // An address already confirmed, or the account's own, is never refused by the cap.
    const own = await api.call('PUT', `/api/v1/forms/${form.id}`, { notification_email: site.email });
    expect(own.status).toBe(200);
  });

  it('holds the cap of addresses waiting when they are set at once (racing requests, any replica)', async () => {
    const site = await hp.createSite(`nrace-${tag}`);
    const api = formsApi(hp, site);
    const form = await api.createOk({ name: 'Race', fields: contactFields });
    const answers = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        api.call('PUT', `/api/v1/forms/${form.id}`, { notification_email: `race${i}-${tag}@example.net` }),
      ),
    );
    for (const res of answers) expect([200, 403], JSON.stringify(res.body)).toContain(res.status);
    // However the requests interleaved, no more than ten addresses were sent a live link.
    const result = (await hp.services.store.db.execute(
      sql`select count(*)::int as n from form_notification_addresses
          where account_id = ${site.accountId} and confirmed_at is null and token_expires_at > now()`,
    )) as unknown as { rows: Array<{ n: number }> };
    expect(result.rows[0]!.n).toBeLessThanOrEqual(10);
  });

  it('documents the cap’s 403 LIMIT_REACHED on the form routes that set an address', async () => {
    const doc = (await (await hp.request('/api/v1/openapi.json')).json()) as Json;
    for (const [path, method] of [
      ['/api/v1/forms', 'post'],
      ['/api/v1/forms/{id}', 'put'],
    ] as const)
      expect(JSON.stringify(doc.paths[path][method].responses['403'] ?? null), `${method} ${path}`).toContain(
        'LIMIT_REACHED',
      );
  });

  it('the account API shows the state and says a link was mailed', async () => {
    const owner = await invitedOwner(hp, `nacct-${tag}@example.com`);
    const site = await hp.createSite(`nacct-${tag}`, { email: owner.email });
    const form = await formsApi(hp, site).createOk({ name: 'Acct', fields: contactFields });
    const path = `/api/v1/account/sites/${site.siteId}/forms/${form.id as number}/notification`;
    const read = await call(hp, 'GET', path, { headers: owner.bearer });
    expect(read.body).toMatchObject({
      notification_email: null,
      effective_email: owner.email,
      notification_email_status: 'confirmed',
    });
    const team = `team-${tag}@example.net`;
    const set = await call(hp, 'PUT', path, { json: { notification_email: team }, headers: owner.bearer });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ notification_email: team, notification_email_status: 'pending' });
    expect(set.body.notification_email_message as string).toContain(`we mailed ${team}`);
    await confirmLinks(mailpit, team);
    const resend = await call(hp, 'POST', `/api/v1/forms/${form.id as number}/notification-email/resend`, {
      headers: owner.bearer,
    });
    expect(resend.status).toBe(202);
  });
});

describe('form notification addresses without SMTP', () => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', { worker: true });
  });
  afterAll(() => hp?.stop());

  it('keeps a new address pending, says it cannot be confirmed, and never claims a mail was sent', async () => {
    const site = await hp.createSite('nmailoff');
    const api = formsApi(hp, site);
    const form: Json = await api.createOk({
      name: 'Off',
      fields: contactFields,
      notification_email: 'offline@example.net',
    });
    expect(form.notification_email_status).toBe('pending');
    expect(form.notification_email_message).toMatch(/sends no mail/);
    expect(await outboxKinds(hp, 'offline@example.net')).toEqual([]);
    const resend = await api.call('POST', `/api/v1/forms/${form.id}/notification-email/resend`);
    expect(resend.status).toBe(409);
    expect(resend.body.message).toMatch(/sends no mail/);
  });
});
