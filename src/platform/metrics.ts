import client from 'prom-client';
import { registry } from '../observability/index.js';

/** Sign-ins by outcome (`ok`, `second_factor`, `invalid`, `limited`) and session kind: a guess storm shows here. */
export const accountSignInsTotal = new client.Counter({
  name: 'hostplane_account_sign_ins_total',
  help: 'Account sign-in attempts by outcome and session kind',
  labelNames: ['result', 'session'] as const,
  registers: [registry],
});
