import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contactFields, formsApi, newClientIp } from '../../support/forms-api.js';
import { backends, startHostplane, type TestHostplane } from '../../support/hostplane.js';

// The API host is the console's origin: none of its pages may be framed by another site
// (clickjacking), and the anonymous temporary pages it serves may not submit forms, open pop-ups or
// show dialogs there (a ready-made phishing page on the sign-in's origin).

/** The directives of a Content-Security-Policy header, by name. */
const directives = (csp: string | null) =>
  new Map(
    (csp ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, ...values]) => [name!.toLowerCase(), values]),
  );

const expectNotFramable = (res: Response, what: string) => {
  expect(directives(res.headers.get('content-security-policy')).get('frame-ancestors'), what).toEqual([
    "'none'",
  ]);
  expect(res.headers.get('x-frame-options'), what).toBe('DENY');
};

describe.each(backends)('framing and anonymous pages on the API host (%s)', (backend) => {
  let hp: TestHostplane;

  const publish = async (html: string) => {
    const res = await hp.request('/ai/publish', {
      method: 'POST',
      json: { html },
      headers: { 'x-forwarded-for': newClientIp() },
    });
    expect(res.status).toBe(200);
    return new URL(((await res.json()) as { url: string }).url).pathname;
  };

  beforeAll(async () => {
    hp = await startHostplane(backend);
  });
  afterAll(() => hp?.stop());

  it('/, /docs and the console cannot be framed', async () => {
    for (const path of ['/', '/docs', '/console', '/console/sign-in']) {
      const res = await hp.request(path);
      expect(res.headers.get('content-type') ?? '', path).toMatch(/^text\/html/);
      expectNotFramable(res, path);
    }
  });

  it('no other answer of the API host can be framed either: JSON, a 404, the OpenAPI document, llms.txt', async () => {
    for (const path of [
      '/no/such/page',
      '/api/v1/openapi.json',
      '/llms.txt',
      '/api/v1/files/list',
      '/healthz',
    ]) {
      expectNotFramable(await hp.request(path), path);
    }
  });

  it('a form’s thank-you page (a plain form post, JavaScript off) cannot be framed', async () => {
    const site = await hp.createSite(`framing-${backend.replace(/\W/g, '')}`);
    const form = await formsApi(hp, site).createOk({ name: 'Plain', fields: contactFields });
    const start = String(Math.floor(Date.now() / 1000) - 20);
    const res = await hp.request(`/f/${form.uuid}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'text/html',
        'x-forwarded-for': newClientIp(),
      },
      body: new URLSearchParams({
        name: 'Ann',
        email: 'ann@example.com',
        _t_trap: '',
        _t_start: start,
      }).toString(),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expectNotFramable(res, 'thank-you page');
  });

  describe('temporary pages', () => {
    /** What the sandbox allows (the `allow-*` tokens of the `sandbox` directive). */
    const sandboxOf = (res: Response) =>
      directives(res.headers.get('content-security-policy')).get('sandbox');

    it('run scripts in an opaque origin, without forms, pop-ups, dialogs or top navigation', async () => {
      const res = await hp.request(await publish('<!doctype html><form><input name=q></form>'));
      expect(res.status).toBe(200);
      expect(sandboxOf(res)).toEqual(['allow-scripts']);
      const csp = directives(res.headers.get('content-security-policy'));
      expect(csp.get('form-action')).toEqual(["'none'"]);
      expectNotFramable(res, 'temporary page');
    });

    it('their 404 page is held to the same policy', async () => {
      const res = await hp.request('/demo/view/neverPublished123');
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(sandboxOf(res)).toEqual(['allow-scripts']);
      expectNotFramable(res, 'temporary page 404');
    });
  });
});
