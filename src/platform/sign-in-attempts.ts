import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { AppError } from '../errors/index.js';
import type { RateLimiter } from '../ratelimit/index.js';
import type { AccountHooks } from './account-hooks.js';

import { limit } from './account-auth.js';
import { readCookie, type SessionCookie } from './cookies.js';
import { accountDeviceSignInsTotal } from './metrics.js';
import type { Platform } from './service.js';

// Sign-in attempts without lockout as a weapon (OWASP, "Slow Down Online Guessing Attacks with
// Device Cookies"). Only failures count against an email's budget: an attempt takes a point
// before the password is checked (so concurrent guesses cannot all pass a check first) and a
// success gives it back. A browser that signed in to the account before holds a device cookie
// (a nonce and an HMAC over the account id and the nonce, with a server secret: nothing stored);
// its attempts count against that device's own small budget instead, so a guesser who spends the
// email's budget does not lock the owner's known browsers out. A device that spends its own
// budget counts as an unknown client again (against the email's).

/** A device cookie lives a year; each successful sign-in replaces it with a new one. */
export const DEVICE_COOKIE_DAYS = 365;
const NONCE_CHARS = 22; // 16 random bytes, base64url
const MAC_CHARS = 43; // HMAC-SHA256, base64url
const SECRET_NAME = 'account_device';

export interface DeviceCookie {
  name: string;
  secure: boolean;
}

/** `__Host-hp_device` over HTTPS (Secure, Path=/, no Domain), `hp_device` on plain http, as the session cookie. */
export const deviceCookieFor = (session: SessionCookie): DeviceCookie => ({
  name: session.secure ? '__Host-hp_device' : 'hp_device',
  secure: session.secure,
});

/** One sign-in attempt, counted against the budget it was allowed by. */
export interface SignInAttempt {
  /** The password was right: the attempt's point is given back and the browser gets a new device cookie. */
  succeeded(res: Response, accountId: number): Promise<void>;
}

/** Consumes a point of each limiter; the longest wait when one says no. */
async function consumeAll(limiters: RateLimiter[], key: string): Promise<number> {
  let wait = 0;
  for (const verdict of await Promise.all(limiters.map((l) => l.consume(key))))
    if (!verdict.allowed) wait = Math.max(wait, verdict.retryAfterSeconds);
  return wait;
}

export function signInAttempts(deps: { platform: Platform; hooks: AccountHooks; cookie: SessionCookie }) {
  const { platform, hooks } = deps;
  const device = deviceCookieFor(deps.cookie);
  const limiters = hooks.limiters.signIn;

  const macOf = async (accountId: number, nonce: string) =>
    createHmac('sha256', await platform.serverSecret(SECRET_NAME))
      .update(`hostplane-device:${accountId}:${nonce}`)
      .digest('base64url');

  /** The nonce of the request's device cookie when it was issued to the account of `email`. */
  const trustedNonce = async (req: Request, email: string): Promise<string | undefined> => {
    const value = readCookie(req, device.name);
    if (value === undefined) return undefined;
    const accountId =
      value.length === NONCE_CHARS + MAC_CHARS ? await platform.accounts.idOfEmail(email) : undefined;
    if (accountId !== undefined) {
      const nonce = value.slice(0, NONCE_CHARS);
      const presented = Buffer.from(value.slice(NONCE_CHARS));
      const expected = Buffer.from(await macOf(accountId, nonce));
      if (presented.length === expected.length && timingSafeEqual(presented, expected)) return nonce;
    }
    // Forged, damaged, or another account's: an unknown client.
    accountDeviceSignInsTotal.inc({ result: 'invalid' });
    return undefined;
  };

  /** Sets a new device cookie for the account (after a sign-in or an accepted invitation). */
  const issueDevice = async (res: Response, accountId: number): Promise<void> => {
    const nonce = randomBytes(16).toString('base64url');
    res.cookie(device.name, nonce + (await macOf(accountId, nonce)), {
      httpOnly: true,
      secure: device.secure,
      // Only the console's own sign-in needs it: never sent on a request another site starts.
      sameSite: 'strict',
      path: '/',
      maxAge: DEVICE_COOKIE_DAYS * 86_400_000,
    });
  };

  /**
   * Counts an attempt before the password is checked: against the client address (every attempt),
   * then the device's budget (a trusted device cookie) or the email's. 429 RATE_LIMITED when spent.
   */
  const begin = async (req: Request, emailInput: string): Promise<SignInAttempt> => {
    await limit(hooks, req);
    const email = emailInput.trim().toLowerCase().slice(0, 254);
    const nonce = await trustedNonce(req, email);
    if (nonce !== undefined) {
      if ((await consumeAll(limiters.perDevice, nonce)) === 0) {
        accountDeviceSignInsTotal.inc({ result: 'trusted' });
        return {
          async succeeded(res, accountId) {
            // The device's failures were its owner's typos: a success clears them.
            await Promise.all(limiters.perDevice.map((l) => l.reset(nonce)));
            await issueDevice(res, accountId);
          },
        };
      }
      accountDeviceSignInsTotal.inc({ result: 'locked' });
    }
    const wait = await consumeAll(limiters.perEmail, email);
    if (wait > 0)
      throw new AppError('RATE_LIMITED', {
        message: 'Too many failed sign-ins for this account; try again later.',
        retryAfterSeconds: wait,
      });
    return {
      async succeeded(res, accountId) {
        // Only this attempt's point: the others may be a guesser's, whom a reset would serve.
        await Promise.all(limiters.perEmail.map((l) => l.refund(email)));
        await issueDevice(res, accountId);
      },
    };
  };

  return { begin, issueDevice };
}
