import client from 'prom-client';
import { registry } from '../observability/index.js';

/** Outbox depth and age come from the database at scrape time, from the outbox last started. */
export interface OutboxStats {
  pending: number;
  failed: number;
  oldestPendingSeconds: number;
}
let statsSource: (() => Promise<OutboxStats>) | undefined;
export function setOutboxStatsSource(source: (() => Promise<OutboxStats>) | undefined): void {
  statsSource = source;
}

export const outboxMessages = new client.Gauge({
  name: 'hostplane_mail_outbox_messages',
  help: 'Mails in the outbox not sent, by status (pending: to be sent; failed: given up).',
  labelNames: ['status'] as const,
  registers: [registry],
  async collect() {
    if (!statsSource) return;
    const stats = await statsSource().catch(() => undefined);
    if (!stats) return;
    this.set({ status: 'pending' }, stats.pending);
    this.set({ status: 'failed' }, stats.failed);
  },
});

export const outboxOldestPending = new client.Gauge({
  name: 'hostplane_mail_outbox_oldest_pending_seconds',
  help: 'Age of the oldest pending mail in the outbox (0 when none).',
  registers: [registry],
  async collect() {
    if (!statsSource) return;
    const stats = await statsSource().catch(() => undefined);
    if (stats) this.set(stats.oldestPendingSeconds);
  },
});

export const mailSendDuration = new client.Histogram({
  name: 'hostplane_mail_send_duration_seconds',
  help: 'Time to hand one mail to the SMTP server, by outcome (sent, failed).',
  labelNames: ['outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const mailSendFailures = new client.Counter({
  name: 'hostplane_mail_send_failures_total',
  help: 'Failed sends, by what follows (retry: tried again later; gave_up: the mail is marked failed).',
  labelNames: ['result'] as const,
  registers: [registry],
});
