import client from 'prom-client';
import { registry } from '../observability/index.js';

export const submissionsTotal = new client.Counter({
  name: 'hostplane_form_submissions_total',
  help: 'Public form submissions by outcome (accepted, spam, rejected: invalid/disabled/origin, limited: quota or rate)',
  labelNames: ['result'] as const,
  registers: [registry],
});
