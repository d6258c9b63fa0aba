import client from 'prom-client';
import { registry } from '../observability/index.js';

export const rateLimitedTotal = new client.Counter({
  name: 'hostplane_rate_limited_total',
  help: 'Requests refused by a rate limit',
  labelNames: ['limiter'] as const,
  registers: [registry],
});
