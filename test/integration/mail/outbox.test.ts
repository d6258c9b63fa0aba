import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  composeSubmissionMail,
  describeError,
  enqueue,
  MailOutbox,
  messageIdFor,
  purgeBySource,
  type MailSettings,
  type MailTransport,
} from '../../../src/mail/index.js';
import { mailOutbox } from '../../../src/mail/tables.js';
import { createLogger, registry } from '../../../src/observability/index.js';
import { migrate, openStore, type Store } from '../../../src/store/index.js';
import { eventually } from '../../support/eventually.js';
import {
  listMessages,
  readHeaders,
  readMessage,
  startMailpit,
  type MailpitServer,
} from '../../support/mailpit.js';
import { createDatabase } from '../../support/postgres.js';
import { freePort } from '../../support/procs.js';

const mailpit = inject('mailpit');
const silent = createLogger('silent');
const unique = () => randomBytes(5).toString('hex');
/** A recipient no other test uses, so the shared Mailpit's messages can be told apart. */
const recipient = () => `owner-${unique()}@example.test`;

const settings = (overrides: Partial<MailSettings> = {}): MailSettings => ({
  smtpUrl: mailpit.smtpUrl,
  from: 'Hostplane <noreply@hostplane.test>',
  maxAttempts: 5,
  retryBaseMs: 20,
  ...overrides,
});

const HOSTILE = '<script>alert("x")</script> & <b>bold</b>';

async function openMigrated(kind: 'pglite' | 'postgres'): Promise<Store> {
  const store =
    kind === 'postgres'
      ? await openStore({ databaseUrl: await createDatabase(inject('postgresUrl')) })
      : await openStore({ pgliteDir: 'memory://' });
  await migrate(store);
  return store;
}

async function row(store: Store, id: number) {
  const [r] = await store.db.select().from(mailOutbox).where(eq(mailOutbox.id, id));
  return r!;
}

/** Queues a plain test mail for `to` outside any caller transaction. */
async function queue(store: Store, to: string, extra: { source?: string; messageId?: string } = {}) {
  const id = await enqueue(store.db, {
    kind: 'test',
    to,
    subject: `Test ${unique()}`,
    text: 'hello',
    html: '<p>hello</p>',
    ...extra,
  });
  return id!;
}

describe.each(['pglite', 'postgres'] as const)('mail outbox on %s', (kind) => {
  let store: Store;
  const outboxes: MailOutbox[] = [];
  const outbox = (s: Partial<MailSettings> = {}, transport?: MailTransport, logger = silent) => {
    const o = new MailOutbox(store.db, settings(s), logger, transport);
    outboxes.push(o);
    return o;
  };

  beforeAll(async () => {
    store = await openMigrated(kind);
  });
  // Each test starts from an empty outbox: a row left by one must not hold up the next.
  afterEach(async () => {
    await store.db.delete(mailOutbox);
  });
  afterAll(async () => {
    for (const o of outboxes) o.close();
    await store?.close();
  });

  it('delivers a submission mail once: recipient, Reply-To, Message-ID, both parts, every field escaped', async () => {
    const to = recipient();
    const messageId = messageIdFor('submission', unique(), 'hostplane.test');
    const mail = composeSubmissionMail({
      formName: `Contact ${HOSTILE}`,
      fields: [
        { name: 'name', label: 'Name', value: `Jane ${HOSTILE}` },
        { name: 'email', label: 'Email', value: 'jane@visitor.test' },
        { name: 'message', label: 'Message', value: 'line one\nline two' },
        { name: 'empty', label: '', value: '' },
      ],
      submittedAt: new Date('2026-11-23T12:00:00Z'),
      siteUrl: 'http://demo.localhost:8080',
      replyTo: 'jane@visitor.test',
      to,
      messageId,
    });
    // Queued inside the caller's transaction, as a domain does with its own write.
    const id = await store.db.transaction(async (tx) => enqueue(tx, { ...mail, source: 'form:1' }));
    expect(id).toBeGreaterThan(0);

    const worker = outbox();
    expect(await worker.deliverDue()).toBeGreaterThanOrEqual(1);
    const [summary, ...more] = await listMessages(mailpit, to);
    expect(more).toEqual([]);
    expect(summary!.MessageID).toBe(messageId);
    expect(summary!.From).toEqual({ Name: 'Hostplane', Address: 'noreply@hostplane.test' });
    expect(summary!.ReplyTo).toEqual([{ Name: '', Address: 'jane@visitor.test' }]);
    expect(summary!.Subject).toBe(`New submission: Contact ${HOSTILE}`);

    const message = await readMessage(mailpit, summary!.ID);
    message.Text = message.Text.replace(/\r\n/g, '\n'); // SMTP lines end in CRLF
    expect(message.Text).toContain(`Name: Jane ${HOSTILE}`);
    expect(message.Text).toContain('Email: jane@visitor.test');
    expect(message.Text).toContain('Message:\n  line one\n  line two');
    expect(message.Text).toContain('empty: (empty)');
    expect(message.Text).toContain('Site: http://demo.localhost:8080');
    expect(message.HTML).toContain(
      'Jane &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;',
    );
    expect(message.HTML).toContain('Contact &lt;script&gt;');
    expect(message.HTML).not.toContain('<script>');
    expect(message.HTML).not.toContain('<b>bold');
    const headers = await readHeaders(mailpit, summary!.ID);
    expect(headers['Message-Id'] ?? headers['Message-ID']).toEqual([`<${messageId}>`]);

    const sent = await row(store, id!);
    expect(sent).toMatchObject({ status: 'sent', attempts: 1, claimedUntil: null, lastError: null });
    expect(sent.sentAt).toBeInstanceOf(Date);
    // Nothing left to do: running again sends nothing more.
    await worker.deliverDue();
    expect(await listMessages(mailpit, to)).toHaveLength(1);
  });

  it('queues nothing when the caller rolls back, and one row per Message-ID', async () => {
    const to = recipient();
    await expect(
      store.db.transaction(async (tx) => {
        await enqueue(tx, { kind: 'test', to, subject: 's', text: 't' });
        throw new Error('the caller fails');
      }),
    ).rejects.toThrow('the caller fails');
    expect(await store.db.select().from(mailOutbox).where(eq(mailOutbox.recipient, to))).toEqual([]);

    const messageId = `${unique()}@hostplane.test`;
    expect(await queue(store, to, { messageId })).toBeGreaterThan(0);
    expect(await enqueue(store.db, { kind: 'test', to, subject: 's', text: 't', messageId })).toBeNull();
    expect(await store.db.select().from(mailOutbox).where(eq(mailOutbox.recipient, to))).toHaveLength(1);
  });

  it('purges the rows of one source only', async () => {
    const to = recipient();
    const source = `form:${unique()}`;
    await queue(store, to, { source });
    await queue(store, to, { source });
    const other = await queue(store, to, { source: `${source}0` });
    expect(await store.db.transaction((tx) => purgeBySource(tx, source))).toBe(2);
    const left = await store.db.select().from(mailOutbox).where(eq(mailOutbox.recipient, to));
    expect(left.map((r) => r.id)).toEqual([other]);
  });

  it('deletes sent mail past the retention, and nothing else', async () => {
    const to = recipient();
    const [old, recent, pending] = [await queue(store, to), await queue(store, to), await queue(store, to)];
    await store.db
      .update(mailOutbox)
      .set({ status: 'sent', sentAt: new Date(Date.now() - 8 * 86_400_000) })
      .where(eq(mailOutbox.id, old));
    await store.db
      .update(mailOutbox)
      .set({ status: 'sent', sentAt: new Date(Date.now() - 6 * 86_400_000) })
      .where(eq(mailOutbox.id, recent));
    expect(await outbox().sweepSent(7 * 86_400_000)).toBe(1);
    const left = await store.db.select({ id: mailOutbox.id }).from(mailOutbox).orderBy(mailOutbox.id);
    expect(left.map((r) => r.id)).toEqual([recent, pending]);
  });

  it('gives up after the configured number of tries and keeps the row, marked failed', async () => {
    const to = recipient();
    const id = await queue(store, to);
    const closedPort = await freePort(); // nothing listens there: every connection is refused
    const worker = outbox({ smtpUrl: `smtp://127.0.0.1:${closedPort}`, maxAttempts: 3, retryBaseMs: 10 });
    await eventually('the mail to be marked failed', async () => {
      await worker.deliverDue();
      return (await row(store, id)).status === 'failed';
    });
    const failed = await row(store, id);
    expect(failed.attempts).toBe(3);
    expect(failed.lastError).toMatch(/ECONNREFUSED|ECONNECTION|ESOCKET/);
    expect(failed.lastError).not.toContain(to);
    // Failed rows are not claimed again.
    await worker.deliverDue();
    expect((await row(store, id)).attempts).toBe(3);
    const stats = await worker.stats();
    expect(stats.failed).toBeGreaterThanOrEqual(1);
    expect(await registry.getSingleMetricAsString('hostplane_mail_outbox_messages')).toMatch(
      /hostplane_mail_outbox_messages\{status="failed"\} [1-9]/,
    );
    expect(await registry.getSingleMetricAsString('hostplane_mail_send_failures_total')).toMatch(
      /result="gave_up"\} [1-9]/,
    );
  });

  it('without SMTP_URL logs the mail (no recipient, no text) and keeps it pending', async () => {
    const to = recipient();
    const id = await queue(store, to);
    let logged = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logged += chunk.toString('utf8');
        done();
      },
    });
    const worker = outbox({ smtpUrl: undefined }, undefined, createLogger('info', sink));
    expect(await worker.deliverDue()).toBe(0);
    await worker.deliverDue(); // logged once per mail, not on every round
    const lines = logged.split('\n').filter((l) => l.includes(`"mailId":${id},`));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('SMTP_URL is not set');
    expect(logged).not.toContain(to);
    expect(logged).not.toContain('hello');
    expect(await row(store, id)).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it("retries a mail whose sender died once the claim's lease runs out; the dead sender's late answer changes nothing", async () => {
    const to = recipient();
    const id = await queue(store, to);
    let failHung!: (err: Error) => void;
    const hung: MailTransport = {
      send: () => new Promise<void>((_, reject) => (failHung = reject)),
      close: () => undefined,
    };
    const dying = outbox({ leaseMs: 300 }, hung).deliverDue();
    await eventually('the first claim', async () => (await row(store, id)).attempts === 1);
    const rescuer = outbox({ leaseMs: 300 });
    await eventually('another worker to send it after the lease', async () => {
      await rescuer.deliverDue();
      return (await row(store, id)).status === 'sent';
    });
    expect((await row(store, id)).attempts).toBe(2);
    failHung(new Error('the first sender finally fails'));
    await dying;
    expect(await row(store, id)).toMatchObject({ status: 'sent', attempts: 2, lastError: null });
    expect(await listMessages(mailpit, to)).toHaveLength(1);
  });
});

describe('mail outbox: SMTP down, then back', () => {
  let store: Store;
  let own: MailpitServer;
  let worker: MailOutbox;

  beforeAll(async () => {
    [store, own] = await Promise.all([openMigrated('postgres'), startMailpit()]);
    worker = new MailOutbox(store.db, settings({ smtpUrl: own.smtpUrl, retryBaseMs: 1_000 }), silent);
  });
  afterAll(async () => {
    worker?.close();
    await Promise.all([store?.close(), own?.close()]);
  });

  it('keeps the mail while the server is down and delivers it exactly once when it is back', async () => {
    const to = recipient();
    await own.stop();
    const id = await queue(store, to);
    expect(await worker.deliverDue()).toBe(0);
    const waiting = await row(store, id);
    expect(waiting).toMatchObject({ status: 'pending', attempts: 1, claimedUntil: null });
    expect(waiting.lastError).toMatch(/ECONNREFUSED|ECONNECTION|ESOCKET/);
    // Backed off, not retried at once (the base delay is a second).
    expect(waiting.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());

    await own.start();
    await eventually('the mail to arrive', async () => {
      await worker.deliverDue();
      return (await listMessages(own, to)).length > 0;
    });
    await worker.deliverDue();
    await worker.deliverDue();
    expect(await listMessages(own, to)).toHaveLength(1);
    expect(await row(store, id)).toMatchObject({ status: 'sent', attempts: 2, lastError: null });
  });
});

describe('mail outbox: two workers on PostgreSQL', () => {
  let stores: Store[];
  const workers: MailOutbox[] = [];

  beforeAll(async () => {
    const url = await createDatabase(inject('postgresUrl'));
    stores = [await openStore({ databaseUrl: url }), await openStore({ databaseUrl: url })];
    await migrate(stores[0]!);
  });
  afterAll(async () => {
    for (const w of workers) w.close();
    await Promise.all(stores.map((s) => s.close()));
  });

  it('never sends a mail twice when two replicas deliver at the same time', async () => {
    const tos = Array.from({ length: 40 }, () => recipient());
    for (const to of tos) await queue(stores[0]!, to);
    // Small batches, so the two workers interleave their claims many times.
    for (const s of stores) workers.push(new MailOutbox(s.db, settings({ batchSize: 3 }), silent));
    const sent = await Promise.all(workers.map((w) => w.deliverDue()));
    expect(sent[0]! + sent[1]!).toBe(40);
    expect(Math.min(...sent)).toBeGreaterThan(0); // both took part
    const all = await listMessages(mailpit);
    for (const to of tos) {
      expect(
        all.filter((m) => m.To.some((a) => a.Address === to)),
        to,
      ).toHaveLength(1);
    }
    const rows = await stores[0]!.db.select().from(mailOutbox);
    expect(rows.every((r) => r.status === 'sent' && r.attempts === 1)).toBe(true);
  });
});

describe('mail outbox: a recipient the SMTP server refuses', () => {
  let store: Store;
  let strict: MailpitServer;

  beforeAll(async () => {
    // This Mailpit accepts mail for @allowed.test only and answers 550 for anyone else.
    [store, strict] = await Promise.all([
      openMigrated('pglite'),
      startMailpit({ args: ['--smtp-allowed-recipients', '@allowed\\.test$'] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([store?.close(), strict?.close()]);
  });

  it('gives up at once on a permanent (5xx) refusal and records it without the address', async () => {
    const refused = recipient();
    const accepted = `someone-${unique()}@allowed.test`;
    const refusedId = await queue(store, refused);
    const acceptedId = await queue(store, accepted);
    const worker = new MailOutbox(store.db, settings({ smtpUrl: strict.smtpUrl, maxAttempts: 5 }), silent);
    try {
      expect(await worker.deliverDue()).toBe(1);
    } finally {
      worker.close();
    }
    const failed = await row(store, refusedId);
    expect(failed).toMatchObject({ status: 'failed', attempts: 1 });
    expect(failed.lastError).toMatch(/\b550\b/);
    expect(failed.lastError).not.toContain(refused);
    expect(failed.lastError).not.toMatch(/@/);
    expect(await row(store, acceptedId)).toMatchObject({ status: 'sent', attempts: 1 });
    expect(await listMessages(strict, accepted)).toHaveLength(1);
  });

  it('keeps addresses out of the recorded error, whatever the server says', () => {
    const err = Object.assign(new Error('Recipient <bob@x.test> rejected: 550 5.1.1 bob@x.test unknown'), {
      code: 'EENVELOPE',
      responseCode: 550,
    });
    const text = describeError(err);
    expect(text).toBe('EENVELOPE 550 Recipient <<address>> rejected: 550 5.1.1 <address> unknown');
    expect(describeError(new Error('x'.repeat(1000))).length).toBeLessThanOrEqual(300);
  });
});
