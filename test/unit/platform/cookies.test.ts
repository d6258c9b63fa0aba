import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import {
  checkCsrf,
  checkSignInOrigin,
  csrfTokenOf,
  readCookie,
  sessionCookieFor,
} from '../../../src/platform/cookies.js';

/** The parts of an Express request the cookie helpers read. */
const request = (method: string, headers: Record<string, string>): Request =>
  ({ method, get: (name: string) => headers[name.toLowerCase()] }) as unknown as Request;

describe('the session cookie', () => {
  it('is __Host-prefixed and Secure over HTTPS, plain hp_session over http (a laptop)', () => {
    expect(sessionCookieFor('https://hostplane.example')).toEqual({
      name: '__Host-hp_session',
      secure: true,
      origin: 'https://hostplane.example',
    });
    expect(sessionCookieFor('http://localhost:8080')).toEqual({
      name: 'hp_session',
      secure: false,
      origin: 'http://localhost:8080',
    });
  });

  it('reads the first cookie of its name and ignores malformed values', () => {
    expect(
      readCookie(request('GET', { cookie: 'a=1; hp_session=hp_sess_abc; hp_session=other' }), 'hp_session'),
    ).toBe('hp_sess_abc');
    expect(readCookie(request('GET', { cookie: 'hp_session=bad value;' }), 'hp_session')).toBeUndefined();
    expect(readCookie(request('GET', {}), 'hp_session')).toBeUndefined();
  });
});

describe('CSRF', () => {
  const token = 'hp_sess_example';
  const origin = 'https://hostplane.example';
  it('derives a token per session', () => {
    expect(csrfTokenOf(token)).toMatch(/^[\w-]{43}$/);
    expect(csrfTokenOf(token)).not.toBe(csrfTokenOf(`${token}x`));
  });

  it('lets reads through and needs the header of the session on every write', () => {
    expect(() => checkCsrf(request('GET', {}), token, origin)).not.toThrow();
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(() => checkCsrf(request(method, {}), token, origin)).toThrow(/X-CSRF-Token/);
      expect(() =>
        checkCsrf(request(method, { 'x-csrf-token': csrfTokenOf('other') }), token, origin),
      ).toThrow();
      expect(() =>
        checkCsrf(request(method, { 'x-csrf-token': csrfTokenOf(token) }), token, origin),
      ).not.toThrow();
    }
  });

  it('refuses another origin, for writes and for starting a browser session', () => {
    const headers = { 'x-csrf-token': csrfTokenOf(token), origin: 'https://evil.example' };
    expect(() => checkCsrf(request('POST', headers), token, origin)).toThrow(/evil\.example/);
    const cookie = sessionCookieFor(origin);
    expect(() => checkSignInOrigin(request('POST', { origin: 'https://evil.example' }), cookie)).toThrow();
    expect(() => checkSignInOrigin(request('POST', { origin }), cookie)).not.toThrow();
    expect(() => checkSignInOrigin(request('POST', {}), cookie)).not.toThrow();
  });
});
