import client from 'prom-client';
import { registry } from '../observability/index.js';

export const submissionsTotal = new client.Counter({
  name: 'hostplane_form_submissions_total',
  help: 'Public form submissions by outcome (accepted, spam, rejected: invalid/disabled/origin, limited: quota or rate)',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const notificationMails = new client.Counter({
  name: 'hostplane_form_notification_mails_total',
  help: 'Notification mails of accepted submissions (queued; withheld: the address is not confirmed yet)',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const notificationAddressEvents = new client.Counter({
  name: 'hostplane_form_notification_addresses_total',
  help: 'Notification address confirmations (mailed: a link queued; throttled: a link not sent, too many; confirmed: a link followed)',
  labelNames: ['event'] as const,
  registers: [registry],
});
