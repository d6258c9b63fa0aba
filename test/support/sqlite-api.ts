import type { TestHostplane, TestSite } from './hostplane.js';
import { newClientIp, type Json } from './forms-api.js';

export type { Json };

/** The SQLite API of one site: the master key, and calls with a scoped token from the site's origin. */
export function sqliteApi(hp: TestHostplane, site: TestSite) {
  const origin = `http://${site.slug}.localhost:8080`;
  const call = async (
    method: string,
    path: string,
    opts: { json?: unknown; headers?: Record<string, string | undefined> } = {},
  ) => {
    // A fresh client address per call, so the register/login limit (5 a minute) only bites where a test sets one.
    const headers: Record<string, string> = { 'x-forwarded-for': newClientIp() };
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = v;
    const res = await hp.request(path, { method, headers, json: opts.json });
    const text = await res.text();
    let body: Json = {};
    try {
      body = text ? (JSON.parse(text) as Json) : {};
    } catch {
      body = { text };
    }
    return { status: res.status, body, headers: res.headers };
  };
  const api = {
    site,
    origin,
    call,
    master: { 'x-api-key': site.apiKey },
    install: (json: Json = { path: 'data/app.sqlite', name: 'app' }) =>
      call('POST', '/api/v1/sqlite/auth/install', { json, headers: { 'x-api-key': site.apiKey } }),
    async token(json?: Json): Promise<string> {
      const res = await api.install(json);
      if (res.status !== 200) throw new Error(`install: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.token as string;
    },
    /** A call with the scoped token from the site's origin (plus `headers`). */
    scoped: (
      token: string,
      method: string,
      path: string,
      json?: unknown,
      headers: Record<string, string | undefined> = {},
    ) => call(method, path, { json, headers: { 'x-sqlite-token': token, origin, ...headers } }),
    async register(
      token: string,
      email: string,
      password = 'correct horse battery',
      headers: Record<string, string> = { 'x-api-key': site.apiKey },
    ) {
      return api.scoped(token, 'POST', '/api/v1/sqlite/auth/register', { email, password }, headers);
    },
    async login(token: string, email: string, password = 'correct horse battery'): Promise<string> {
      const res = await api.scoped(token, 'POST', '/api/v1/sqlite/auth/login', { email, password });
      if (res.status !== 200) throw new Error(`login: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.userToken as string;
    },
  };
  return api;
}
export type SqliteApi = ReturnType<typeof sqliteApi>;
