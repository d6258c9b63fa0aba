import { jsonRequest, type TestHostplane } from './hostplane.js';
import type { Json } from './forms-api.js';

let addressCounter = 0;
/** A distinct client address per call (the server trusts X-Forwarded-For from loopback). */
export const newAddress = () => `203.0.113.${(++addressCounter % 250) + 1}`;

export interface Answer {
  status: number;
  body: Json;
  headers: Headers;
}

/** Calls the server on `port` (default: hp's) with a JSON body, from a fresh client address unless given. */
export async function call(
  hp: TestHostplane,
  method: string,
  path: string,
  init: { json?: unknown; headers?: Record<string, string>; port?: number } = {},
): Promise<Answer> {
  const { res, body } = await jsonRequest(init.port ?? hp.port, path, {
    method,
    host: 'localhost:8080',
    json: init.json,
    headers: { 'x-forwarded-for': newAddress(), ...init.headers },
  });
  return { status: res.status, body: body as Json, headers: res.headers };
}

/** The token of a console link (`…#token=<token>`). */
export const tokenOf = (link: string): string => {
  const token = new URL(link).hash.replace(/^#token=/, '');
  if (!token) throw new Error(`no token in ${link}`);
  return token;
};

export const PASSWORD = 'correct horse battery staple 42';

/** An owner invited by the operator who accepted the invitation: their bearer session. */
export async function invitedOwner(
  hp: TestHostplane,
  email: string,
  options: { plan?: 'free' | 'standard' } = {},
): Promise<{ email: string; token: string; bearer: Record<string, string> }> {
  const invited = await hp.services.platform.accounts.invite({ email, plan: options.plan });
  const accepted = await call(hp, 'POST', '/api/v1/account/invitations/accept', {
    json: { token: tokenOf(invited.link), password: PASSWORD },
  });
  if (accepted.status !== 200) throw new Error(`accept: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  const token = accepted.body.token as string;
  return { email, token, bearer: { authorization: `Bearer ${token}` } };
}

/** A browser session: the cookie pair and the CSRF token. */
export interface BrowserSession {
  cookie: string;
  value: string;
  csrf: string;
  setCookie: string;
}

export async function browserSignIn(
  hp: TestHostplane,
  email: string,
  options: { password?: string; cookie?: string; port?: number } = {},
): Promise<BrowserSession> {
  const res = await call(hp, 'POST', '/api/v1/account/sign-in', {
    json: { email, password: options.password ?? PASSWORD, session: 'cookie' },
    headers: options.cookie ? { cookie: options.cookie } : {},
    port: options.port,
  });
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${JSON.stringify(res.body)}`);
  // The session cookie (the answer also sets the device cookie, docs/developers/security.md "Sign-in attempts and lockout").
  const setCookie = res.headers.getSetCookie().find((c) => /^(__Host-)?hp_session=/.test(c)) ?? '';
  const pair = setCookie.split(';')[0]!;
  return { cookie: pair, value: pair.split('=')[1]!, csrf: res.body.csrf_token as string, setCookie };
}
