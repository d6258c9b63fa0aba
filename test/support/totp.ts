import { Secret, TOTP } from 'otpauth';
import { call, PASSWORD } from './account-api.js';
import type { TestHostplane } from './hostplane.js';

/** The code an authenticator app shows for `secret`, `steps` periods (30 s) from now. */
export function totpCode(secret: string, steps = 0): string {
  const totp = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' });
  return totp.generate({ timestamp: Date.now() + steps * 30_000 });
}

/** A 6-digit code that is none of the codes accepted now (the window is one step either side). */
export function wrongCode(secret: string): string {
  const near = new Set([-1, 0, 1].map((s) => totpCode(secret, s)));
  for (let n = 0; ; n++) {
    const code = String(n).padStart(6, '0');
    if (!near.has(code)) return code;
  }
}

/** Turns TOTP on for the owner of `bearer`: its secret and recovery codes (the current step is used). */
export async function enableTotp(hp: TestHostplane, bearer: Record<string, string>, port?: number) {
  const setup = await call(hp, 'POST', '/api/v1/account/totp/setup', {
    json: { password: PASSWORD },
    headers: bearer,
    port,
  });
  if (setup.status !== 200) throw new Error(`setup: ${setup.status} ${JSON.stringify(setup.body)}`);
  const secret = setup.body.secret as string;
  const confirmed = await call(hp, 'POST', '/api/v1/account/totp/confirm', {
    json: { code: totpCode(secret) },
    headers: bearer,
    port,
  });
  if (confirmed.status !== 200)
    throw new Error(`confirm: ${confirmed.status} ${JSON.stringify(confirmed.body)}`);
  return {
    secret,
    recoveryCodes: confirmed.body.recovery_codes as string[],
    uri: setup.body.otpauth_uri as string,
  };
}
