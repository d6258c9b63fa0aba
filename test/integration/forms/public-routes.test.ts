import { describe, expect, it } from 'vitest';
import { plans } from '../../../src/platform/plans.js';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { contactFields, formsApi, newClientIp, type Json } from '../../support/forms-api.js';
import { backends } from '../../support/hostplane.js';

describe.each(backends)('forms API on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `forms-${backend.replace(/\W/g, '')}`);
  const freshForms = async (plan: Parameters<typeof fixture.freshSite>[0] = 'free') =>
    formsApi(fixture.hp, (await fixture.freshSite(plan)).site);

  it('accepts a good submission, scores bots as spam, and lists with stats', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    const good = await api.submit(form.uuid, {
      name: 'Ann',
      email: 'ann@example.com',
      topic: 'Sales',
      message: 'Hello there',
      unknown_key: 'ignored',
    });
    expect(good.status).toBe(201);
    expect(await good.json()).toEqual({ success: true, message: expect.any(String) });
    const trap = await api.submit(
      form.uuid,
      { name: 'Bot', email: 'bot@example.com' },
      { trap: 'http://spam' },
    );
    expect(trap.status).toBe(201); // the same answer: a bot learns nothing
    const fast = await api.submit(
      form.uuid,
      { name: 'Fast', email: 'fast@example.com' },
      { startedSecondsAgo: 0 },
    );
    expect(fast.status).toBe(201);

    const list = await api.call('GET', `/api/v1/forms/${form.id}/submissions`);
    expect(list.status).toBe(200);
    expect(list.body.form).toEqual({ id: form.id, uuid: form.uuid, name: form.name });
    expect(list.body.stats).toEqual({ total: 3, spam: 2, archived: 0, unread: 1, legitimate: 1 });
    expect(list.body.pagination).toMatchObject({
      current_page: 1,
      per_page: 50,
      total_items: 3,
      total_pages: 1,
    });
    const byName = Object.fromEntries(list.body.submissions.map((s: Json) => [s.data.name, s]));
    expect(byName.Ann).toMatchObject({ is_spam: false, is_read: false, is_archived: false, read_at: null });
    expect(byName.Ann.data).toEqual({
      name: 'Ann',
      email: 'ann@example.com',
      topic: 'Sales',
      message: 'Hello there',
    });
    expect(byName.Ann.spam_score).toBeLessThan(70);
    expect(byName.Bot).toMatchObject({ is_spam: true });
    expect(byName.Bot.spam_score).toBeGreaterThanOrEqual(70);
    expect(byName.Fast.is_spam).toBe(true);
    expect(byName.Ann).not.toHaveProperty('metadata');

    const spamOnly = await api.call('GET', `/api/v1/forms/${form.id}/submissions?is_spam=true`);
    expect(spamOnly.body.submissions.map((s: Json) => s.data.name).sort()).toEqual(['Bot', 'Fast']);
    expect((await api.call('GET', `/api/v1/forms/${form.id}`)).body.form.submission_count).toBe(3);

    const one = await api.call('GET', `/api/v1/forms/${form.id}/submissions/${byName.Bot.uuid}`);
    expect(one.status).toBe(200);
    expect(one.body.submission.spam_reasons).toContain('honeypot_filled');
    expect(one.body.submission.metadata.ip_address).toMatch(/^[0-9a-f]{64}$/);
    expect(one.body.submission.metadata.ip_address).not.toContain('198.51.100');
    // Reading is free of side effects.
    expect(one.body.submission.is_read).toBe(false);
    const usage = await api.call('GET', '/api/v1/forms/usage');
    expect(usage.body.submissions.used).toBe(1); // spam is not counted
  });

  it('refuses invalid values with a 400 naming each field, storing nothing', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    const res = await api.submit(form.uuid, { email: 'not-an-email', topic: 'Other' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as Json;
    expect(body.error).toBe('Validation failed');
    expect(Object.keys(body.fields).sort()).toEqual(['email', 'name', 'topic']);
    expect(body.message).toMatch(/email/);
    const list = await api.call('GET', `/api/v1/forms/${form.id}/submissions`);
    expect(list.body.stats.total).toBe(0);
  });

  it('refuses a disabled form and an unknown form', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    await api.call('POST', `/api/v1/forms/${form.id}/toggle`);
    const res = await api.submit(form.uuid, { name: 'Ann', email: 'ann@example.com' });
    expect(res.status).toBe(403);
    expect(((await res.json()) as Json).error).toBe('Form disabled');
    expect((await api.submit('00000000-0000-4000-8000-000000000000', {})).status).toBe(404);
    expect((await api.submit('not-a-uuid', {})).status).toBe(404);
    expect((await api.call('GET', `/api/v1/forms/${form.id}/submissions`)).body.stats.total).toBe(0);
    await api.call('POST', `/api/v1/forms/${form.id}/toggle`);
    const huge = await api.submit(form.uuid, {
      name: 'Ann',
      email: 'ann@example.com',
      message: 'x'.repeat(200_000),
    });
    expect(huge.status).toBe(413);
    const nested = await api.submit(form.uuid, { name: { first: 'Ann' }, email: 'ann@example.com' });
    expect(nested.status).toBe(400);
    const xml = await fixture.hp.request(`/f/${form.uuid}`, {
      method: 'POST',
      headers: { 'content-type': 'application/xml', 'x-forwarded-for': newClientIp() },
      body: '<name>Ann</name>',
    });
    expect(xml.status).toBe(415);
    expect((await api.call('GET', `/api/v1/forms/${form.id}/submissions`)).body.stats.total).toBe(0);
  });

  it('grants CORS to the account’s own site origins only', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    const siteOrigin = `http://${api.site.slug}.localhost:8080`;
    const preflight = await fixture.hp.request(`/f/${form.uuid}`, {
      method: 'OPTIONS',
      headers: { origin: siteOrigin, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(siteOrigin);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');

    const evil = await fixture.hp.request(`/f/${form.uuid}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();

    const ok = await api.submit(form.uuid, { name: 'Ann', email: 'ann@example.com' }, { origin: siteOrigin });
    expect(ok.status).toBe(201);
    expect(ok.headers.get('access-control-allow-origin')).toBe(siteOrigin);
    const refused = await api.submit(
      form.uuid,
      { name: 'Ann', email: 'ann@example.com' },
      { origin: 'https://evil.example' },
    );
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    // Another account's site is another origin.
    const other = await freshForms();
    const cross = await api.submit(
      form.uuid,
      { name: 'Ann', email: 'ann@example.com' },
      { origin: `http://${other.site.slug}.localhost:8080` },
    );
    expect(cross.status).toBe(403);
  });

  it('grants CORS only to an Origin equal to a site’s serialised origin', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    const host = `${api.site.slug}.localhost:8080`;
    for (const origin of [
      `http://${host}/`,
      `http://${host}/contact.html?x=1`,
      `http://${host.toUpperCase()}`,
      `http://user@${host}`,
      `blob:http://${host}/4d1c2c2e-54d4-4b8f-9f0b-1f0f3b1f8f3a`,
      `https://${host}`,
      `http://${api.site.slug}.localhost:9999`,
      'null',
    ]) {
      const preflight = await fixture.hp.request(`/f/${form.uuid}`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST' },
      });
      expect(preflight.headers.get('access-control-allow-origin'), origin).toBeNull();
      const res = await api.submit(form.uuid, { name: 'Ann', email: 'ann@example.com' }, { origin });
      expect(res.status, origin).toBe(403);
      expect(res.headers.get('access-control-allow-origin'), origin).toBeNull();
    }
    const ok = await api.submit(
      form.uuid,
      { name: 'Ann', email: 'ann@example.com' },
      { origin: `http://${host}` },
    );
    expect(ok.status).toBe(201);
    expect(ok.headers.get('access-control-allow-origin')).toBe(`http://${host}`);
    expect((await api.call('GET', `/api/v1/forms/${form.id}/submissions`)).body.stats.total).toBe(1);
  });

  it('answers a plain form post with a page or a redirect', async () => {
    const api = await freshForms();
    const form = await api.createOk({ name: 'Plain', fields: contactFields, success_message: 'We got <it>' });
    const post = (fields: Record<string, string>) =>
      fixture.hp.request(`/f/${form.uuid}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'text/html,application/xhtml+xml',
          'x-forwarded-for': newClientIp(),
        },
        body: new URLSearchParams(fields).toString(),
      });
    const start = String(Math.floor(Date.now() / 1000) - 20);
    const page = await post({ name: 'Ann', email: 'ann@example.com', _t_trap: '', _t_start: start });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('We got &lt;it&gt;');
    const invalid = await post({ name: '', email: 'x', _t_start: start });
    expect(invalid.status).toBe(400);
    expect(await invalid.text()).toMatch(/<h1>/);

    await api.call('PUT', `/api/v1/forms/${form.id}`, { redirect_url: 'https://example.com/thanks' });
    const redirect = await post({ name: 'Bo', email: 'bo@example.com', _t_trap: '', _t_start: start });
    expect(redirect.status).toBe(303);
    expect(redirect.headers.get('location')).toBe('https://example.com/thanks');
  });

  it('stores a scripted post without either anti-spam field as spam, and the no-JS form post as legitimate', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    const send = (fields: Record<string, string>, urlencoded: boolean) =>
      urlencoded
        ? fixture.hp.request(`/f/${form.uuid}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/x-www-form-urlencoded',
              'x-forwarded-for': newClientIp(),
            },
            body: new URLSearchParams(fields).toString(),
          })
        : fixture.hp.request(`/f/${form.uuid}`, {
            method: 'POST',
            headers: { 'x-forwarded-for': newClientIp() },
            json: fields,
          });
    // What a naive bot sends: the fields, nothing else (JSON and a plain post alike).
    expect((await send({ name: 'Bot Json', email: 'bot1@example.com' }, false)).status).toBe(201);
    expect((await send({ name: 'Bot Plain', email: 'bot2@example.com' }, true)).status).toBe(201);
    // The embedded form with JavaScript off: both inputs are posted, `_t_start` empty.
    expect(
      (await send({ name: 'No Script', email: 'ns@example.com', _t_trap: '', _t_start: '' }, true)).status,
    ).toBe(201);
    const list = await api.call('GET', `/api/v1/forms/${form.id}/submissions`);
    const byName = Object.fromEntries(list.body.submissions.map((s: Json) => [s.data.name, s]));
    for (const bot of ['Bot Json', 'Bot Plain']) {
      expect(byName[bot], bot).toMatchObject({ is_spam: true });
      expect(byName[bot].spam_score).toBeGreaterThanOrEqual(70);
      const one = await api.call('GET', `/api/v1/forms/${form.id}/submissions/${byName[bot].uuid}`);
      expect(one.body.submission.spam_reasons).toContain('no_anti_spam_fields');
    }
    expect(byName['No Script']).toMatchObject({ is_spam: false });
  });

  it('never lets 20 concurrent submissions overshoot the monthly limit', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    const saved = plans.free.maxSubmissionsPerMonth;
    plans.free.maxSubmissionsPerMonth = 5;
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          api.submit(form.uuid, { name: `N${i}`, email: `n${i}@example.com`, message: `distinct ${i}` }),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(5);
      expect(statuses.filter((s) => s === 403)).toHaveLength(15);
      const refused = (await results.find((r) => r.status === 403)!.json()) as Json;
      expect(refused).toMatchObject({ error: 'Submission limit reached', submission_limit: 5 });
      expect(new Date(refused.resets_at).getUTCDate()).toBe(1);
      const list = await api.call('GET', `/api/v1/forms/${form.id}/submissions`);
      expect(list.body.stats.total).toBe(5);
      expect((await api.call('GET', '/api/v1/forms/usage')).body.submissions.used).toBe(5);
    } finally {
      plans.free.maxSubmissionsPerMonth = saved;
    }
  });

  it('rate-limits one client address (429 with Retry-After) across forms', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    const ip = newClientIp();
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      const res = await api.submit(form.uuid, { name: `R${i}`, email: `r${i}@example.com` }, { ip });
      statuses.push(res.status);
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(statuses.slice(0, 20).every((s) => s === 201)).toBe(true);
    expect(statuses[20]).toBe(429);
  });
});
