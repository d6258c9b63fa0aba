import { define } from '../define.js';

/** Codes of the account area (/api/v1/account/…): sign-up, sign-in, one-time tokens, domains. */
export const accountErrors = {
  SIGNUP_CLOSED: define({
    status: 403,
    error: 'SIGNUP_CLOSED',
    message: () => 'Sign-up is by invitation only on this server: ask its operator for an invitation.',
    description: 'HOSTPLANE_SIGNUP is invite: accounts come from `hostplane admin invite`',
  }),
  WRONG_PASSWORD: define({
    status: 403,
    error: 'WRONG_PASSWORD',
    message: () => 'The current password is wrong.',
    description: 'Changing the password or the two-factor sign-in needs the current password',
  }),
  SUDO_REQUIRED: define({
    status: 403,
    error: 'SUDO_REQUIRED',
    message: () =>
      'Confirm your password first: this action needs it entered within the last 15 minutes. Send it to POST /api/v1/account/sudo (or a code from your authenticator app when two-factor sign-in is on), then try again.',
    description:
      'Sudo mode: deleting a site or creating a permanent key needs a session whose password (or TOTP code) was confirmed within the last 15 minutes; so does minting a lasting SQLite credential (a scoped token, an end user registered or given a password with the master key) with a temporary key, whose minting session must be in sudo mode',
  }),
  // 401, as the spec answers every other credential that is unknown, invalid or expired (sections 5
  // and 7: keys, scoped tokens, sessions, INVALID_CREDENTIALS); a token of the wrong shape is a 400.
  INVALID_TOKEN: define({
    status: 401,
    error: 'INVALID_TOKEN',
    message: () => 'This link is invalid, expired or already used: ask for a new one.',
    description:
      'An invitation, verification or reset token of the right shape that is unknown, expired or used',
  }),
  EMAIL_NOT_VERIFIED: define({
    status: 403,
    error: 'EMAIL_NOT_VERIFIED',
    message: () =>
      'Confirm your email address first: follow the link we mailed you (POST /api/v1/account/verify/resend sends a new one).',
    description: 'Open sign-up: the account cannot create a site before its address is verified',
  }),
  ACCOUNT_EXISTS: define<{ email: string }>({
    status: 409,
    error: 'ACCOUNT_EXISTS',
    message: (p) =>
      `${p.email} already has an account with a password: they can reset it from the sign-in page.`,
    description: 'An invitation for an account that can already sign in',
  }),
  INVALID_TOTP_CODE: define({
    status: 403,
    error: 'INVALID_TOTP_CODE',
    message: () =>
      'That code is wrong or was already used: enter the current 6-digit code from your authenticator app, or an unused recovery code.',
    description:
      'A TOTP code (or recovery code) that does not match, is out of its time window or was used before',
  }),
  INVALID_CHALLENGE: define({
    status: 401,
    error: 'INVALID_CHALLENGE',
    message: () => 'This sign-in step expired, was already used or had too many wrong codes: sign in again.',
    description:
      'The second sign-in step names a challenge that is unknown, expired (5 minutes), used or exhausted',
  }),
  TOTP_ALREADY_ENABLED: define({
    status: 409,
    error: 'TOTP_ALREADY_ENABLED',
    message: () => 'Two-factor sign-in is already on: turn it off first to set up another authenticator.',
    description: 'TOTP setup while it is enabled',
  }),
  TOTP_NOT_ENABLED: define<{ message: string }>({
    status: 409,
    error: 'TOTP_NOT_ENABLED',
    message: (p) => p.message,
    description: 'A TOTP confirm without a setup, or a disable or regeneration while it is off',
  }),
  CSRF_REJECTED: define<{ message: string }>({
    status: 403,
    error: 'CSRF_REJECTED',
    message: (p) => p.message,
    description:
      'A write authenticated by the session cookie without the X-CSRF-Token header of its session, or from another origin',
  }),
  LIMIT_REACHED: define<{ message: string; limit: number }>({
    status: 403,
    error: 'LIMIT_REACHED',
    message: (p) => p.message,
    extra: (p) => ({ limit: p.limit }),
    extraSchema: (z) => ({ limit: z.int().describe('How many the account or site may have') }),
    description:
      'The account has as many sites (or notification addresses waiting for confirmation), or the site as many permanent or temporary keys or custom domains, as allowed',
  }),
  DOMAIN_TAKEN: define<{ hostname: string }>({
    status: 409,
    error: 'DOMAIN_TAKEN',
    message: (p) => `${p.hostname} is already attached to a site.`,
    description: 'The custom domain routes to another site',
  }),
  DOMAIN_NOT_VERIFIED: define<{ hostname: string; record: string; value: string }>({
    status: 409,
    error: 'DOMAIN_NOT_VERIFIED',
    message: (p) =>
      `No TXT record ${p.record} with the value "${p.value}" was found yet. DNS changes can take a while; try again later.`,
    description: 'The DNS TXT record that proves ownership of a custom domain is missing',
  }),
};
