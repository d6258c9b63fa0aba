import client from 'prom-client';
import { registry } from '../observability/index.js';

/** Sign-ins by outcome (`ok`, `second_factor`, `invalid`, `limited`) and session kind: a guess storm shows here. */
export const accountSignInsTotal = new client.Counter({
  name: 'hostplane_account_sign_ins_total',
  help: 'Account sign-in attempts by outcome and session kind',
  labelNames: ['result', 'session'] as const,
  registers: [registry],
});

/**
 * Sign-ins that presented a device cookie (docs/developers/security.md "Sign-in attempts and lockout"): `trusted`
 * (counted against the device's own budget), `locked` (the device's budget is spent: counted
 * against the email's) or `invalid` (forged, damaged or another account's).
 */
export const accountDeviceSignInsTotal = new client.Counter({
  name: 'hostplane_account_device_sign_ins_total',
  help: 'Account sign-in attempts that presented a device cookie, by outcome',
  labelNames: ['result'] as const,
  registers: [registry],
});

/**
 * Sudo mode: `required` (an action refused with SUDO_REQUIRED), `confirmed` (POST …/sudo passed),
 * `failed` (a wrong password or code there). Many failures against few confirmations: a stolen
 * session guessing.
 */
export const accountSudoTotal = new client.Counter({
  name: 'hostplane_account_sudo_total',
  help: 'Sudo mode: actions refused for want of a recent confirmation, confirmations, failed confirmations',
  labelNames: ['result'] as const,
  registers: [registry],
});
