import type { TestHostplane, TestSite } from './hostplane.js';

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field

let clientCounter = 0;
/** A distinct client address per caller (the server trusts X-Forwarded-For from loopback). */
export const newClientIp = () => `198.51.100.${(++clientCounter % 250) + 1}`;

export const contactFields = [
  { name: 'name', label: 'Your name', type: 'text', required: true },
  { name: 'email', label: 'Email', type: 'email', required: true },
  { name: 'topic', label: 'Topic', type: 'select', options: ['Sales', 'Support'] },
  { name: 'message', label: 'Message', type: 'textarea' },
];

/** The forms API of one site, through its key. */
export function formsApi(hp: TestHostplane, site: TestSite) {
  const headers = { 'x-api-key': site.apiKey };
  const call = async (method: string, path: string, json?: unknown) => {
    const res = await hp.request(path, { method, headers, json });
    const text = await res.text();
    let body: Json = {};
    try {
      body = JSON.parse(text) as Json;
    } catch {
      body = { text };
    }
    return { status: res.status, body, headers: res.headers };
  };
  return {
    site,
    call,
    create: (body: Json = { name: 'Contact', fields: contactFields }) => call('POST', '/api/v1/forms', body),
    async createOk(body?: Json): Promise<Json> {
      const res = await this.create(body);
      if (res.status !== 201) throw new Error(`create form: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.form as Json;
    },
    /** Posts a submission as a browser's fetch would (JSON), from its own client address. */
    submit: (
      uuid: string,
      data: Json,
      opts: { startedSecondsAgo?: number | null; trap?: string; origin?: string; ip?: string } = {},
    ) => {
      const body: Json = { ...data, _t_trap: opts.trap ?? '' };
      if (opts.startedSecondsAgo !== null)
        body._t_start = Math.floor(Date.now() / 1000) - (opts.startedSecondsAgo ?? 10);
      const extra: Record<string, string> = { 'x-forwarded-for': opts.ip ?? newClientIp() };
      if (opts.origin) extra.origin = opts.origin;
      return hp.request(`/f/${uuid}`, { method: 'POST', headers: extra, json: body });
    },
  };
}
export type FormsApi = ReturnType<typeof formsApi>;
