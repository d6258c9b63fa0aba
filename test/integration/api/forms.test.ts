import { describe, expect, it } from 'vitest';
import { plans } from '../../../src/platform/plans.js';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { contactFields, formsApi, newClientIp, type Json } from '../../support/forms-api.js';
import { backends } from '../../support/hostplane.js';

describe.each(backends)('forms API on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `forms-${backend.replace(/\W/g, '')}`);
  const freshForms = async (plan: Parameters<typeof fixture.freshSite>[0] = 'free') =>
    formsApi(fixture.hp, (await fixture.freshSite(plan)).site);

  it('creates a form (201) with ids, slug, submission URL and defaults', async () => {
    const api = await freshForms();
    const res = await api.create({ name: 'Contact us!', description: 'Main form', fields: contactFields });
    expect(res.status).toBe(201);
    const form = res.body.form as Json;
    expect(form).toMatchObject({
      name: 'Contact us!',
      slug: 'contact-us',
      description: 'Main form',
      is_active: true,
      submission_count: 0,
      success_message: null,
      redirect_url: null,
      notification_email: null,
    });
    expect(form.id).toBeTypeOf('number');
    expect(form.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(form.submission_url).toBe(`http://localhost:8080/f/${form.uuid}`);
    expect(new Date(form.created_at).toISOString()).toBe(form.created_at);
    expect(form.fields).toHaveLength(4);
    form.fields.forEach((f: Json, i: number) => {
      expect(f.id).toMatch(/^fld_[0-9a-f]{12}$/);
      expect(f.position).toBe(i);
    });
    expect(form.fields[0]).toMatchObject({ name: 'name', required: true, placeholder: null, options: null });
    expect(form.fields[2]).toMatchObject({ type: 'select', required: false, options: ['Sales', 'Support'] });

    const second = await api.createOk({ name: 'Contact us', fields: contactFields });
    expect(second.slug).toBe('contact-us-2');

    const list = await api.call('GET', '/api/v1/forms');
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(2);
    expect(Object.keys(list.body.forms[0]).sort()).toEqual(
      ['created_at', 'id', 'is_active', 'name', 'slug', 'submission_count', 'uuid'].sort(),
    );
    const got = await api.call('GET', `/api/v1/forms/${form.id}`);
    expect(got.body.form).toEqual(form);
  });

  it('refuses malformed definitions with a 400 that names the field, and stores nothing', async () => {
    const api = await freshForms();
    const cases: Array<[Json, RegExp, number?]> = [
      [{ fields: contactFields }, /name/],
      [{ name: 'x' }, /fields/],
      [{ name: 'x', fields: [] }, /fields/],
      [{ name: 'x', fields: [{ name: 'a', label: 'A', type: 'color' }] }, /type/],
      [{ name: 'x', fields: [{ name: 'a', label: 'A', type: 'select' }] }, /options/],
      [{ name: 'x', fields: [{ name: '1a', label: 'A', type: 'text' }] }, /name/],
      [{ name: 'x', fields: [{ name: '_t_trap', label: 'A', type: 'text' }] }, /name/],
      [
        {
          name: 'x',
          fields: [
            { name: 'a', label: 'A', type: 'text' },
            { name: 'A', label: 'B', type: 'text' },
          ],
        },
        /used by another field/,
        409, // well-formed, but the names clash
      ],
      [
        {
          name: 'x',
          fields: Array.from({ length: 51 }, (_, i) => ({ name: `f${i}`, label: 'L', type: 'text' })),
        },
        /50/,
      ],
      [{ name: 'x', fields: contactFields, redirect_url: 'javascript:alert(1)' }, /redirect_url/],
      [{ name: 'x', fields: contactFields, notification_email: 'nope' }, /notification_email/],
    ];
    for (const [body, message, status = 400] of cases) {
      const res = await api.create(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(res.body.error).toBeTypeOf('string');
      expect(res.body.message).toMatch(message);
    }
    const bad = await fixture.hp.request('/api/v1/forms', {
      method: 'POST',
      headers: { 'x-api-key': api.site.apiKey, 'content-type': 'application/json' },
      body: '{"name": ',
    });
    expect(bad.status).toBe(400);
    const huge = await api.create({ name: 'x', fields: contactFields, description: 'x'.repeat(300_000) });
    expect(huge.status).toBe(413);
    const wrongTypes = await api.create({ name: 42, fields: 'many' });
    expect(wrongTypes.status).toBe(400);
    expect(wrongTypes.body.message).toMatch(/name/);
    expect((await api.call('GET', '/api/v1/forms')).body.total).toBe(0);
  });

  it('enforces the plan’s form count (free: 2) and reports usage', async () => {
    const api = await freshForms();
    await api.createOk();
    await api.createOk();
    const third = await api.create();
    expect(third.status).toBe(403);
    expect(third.body).toMatchObject({
      error: 'Form limit reached',
      current_form_count: 2,
      form_limit: 2,
      current_plan: 'free',
    });
    const usage = await api.call('GET', '/api/v1/forms/usage');
    expect(usage.body).toMatchObject({ success: true, plan: 'free', forms: { used: 2, limit: 2 } });
    expect(usage.body.submissions).toMatchObject({ used: 0, limit: 100 });
  });

  it('updates, toggles, and manages fields with stable ids', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    const ids = form.fields.map((f: Json) => f.id);

    const put = await api.call('PUT', `/api/v1/forms/${form.id}`, {
      name: 'Renamed',
      success_message: 'Thanks!',
      fields: [...contactFields].reverse(),
    });
    expect(put.status).toBe(200);
    expect(put.body.form).toMatchObject({ name: 'Renamed', slug: 'contact', success_message: 'Thanks!' });
    // Same names keep their ids, in the new order.
    expect(put.body.form.fields.map((f: Json) => f.id)).toEqual([...ids].reverse());
    expect((await api.call('PUT', `/api/v1/forms/${form.id}`, {})).status).toBe(400);

    const toggled = await api.call('POST', `/api/v1/forms/${form.id}/toggle`);
    expect(toggled.body).toMatchObject({ success: true, is_active: false });
    expect((await api.call('POST', `/api/v1/forms/${form.id}/toggle`)).body.is_active).toBe(true);

    const added = await api.call('POST', `/api/v1/forms/${form.id}/fields`, {
      name: 'phone',
      label: 'Phone',
      type: 'tel',
      position: 0,
    });
    expect(added.status).toBe(200);
    expect(added.body.field).toMatchObject({ name: 'phone', position: 0, required: false });
    expect(added.body.fields).toHaveLength(5);
    const dup = await api.call('POST', `/api/v1/forms/${form.id}/fields`, {
      name: 'phone',
      label: 'P',
      type: 'tel',
    });
    expect(dup.status).toBe(409);

    const fieldId = added.body.field.id as string;
    const updated = await api.call('PUT', `/api/v1/forms/${form.id}/fields/${fieldId}`, {
      label: 'Telephone',
      required: true,
      placeholder: '+1 555',
    });
    expect(updated.body.field).toMatchObject({
      id: fieldId,
      label: 'Telephone',
      required: true,
      placeholder: '+1 555',
    });
    expect((await api.call('PUT', `/api/v1/forms/${form.id}/fields/fld_nope`, { label: 'x' })).status).toBe(
      404,
    );
    // A select keeps its options: taking them away clashes with the field's type.
    const selectId = form.fields.find((f: Json) => f.type === 'select').id as string;
    const noOptions = await api.call('PUT', `/api/v1/forms/${form.id}/fields/${selectId}`, { options: null });
    expect(noOptions.status).toBe(409);

    const order = [...added.body.fields.map((f: Json) => f.id)].reverse();
    const reordered = await api.call('POST', `/api/v1/forms/${form.id}/fields/reorder`, { field_ids: order });
    expect(reordered.status).toBe(200);
    expect(reordered.body.fields.map((f: Json) => f.id)).toEqual(order);
    const partial = await api.call('POST', `/api/v1/forms/${form.id}/fields/reorder`, {
      field_ids: order.slice(1),
    });
    expect(partial.status).toBe(409);
    expect(partial.body.message).toMatch(/every field/);

    const deleted = await api.call('DELETE', `/api/v1/forms/${form.id}/fields/${fieldId}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.fields.map((f: Json) => f.id)).not.toContain(fieldId);
    expect((await api.call('DELETE', `/api/v1/forms/${form.id}/fields/${fieldId}`)).status).toBe(404);
  });

  it('hides other sites’ and accounts’ forms (404), and deletes a form with its submissions', async () => {
    const owner = await freshForms();
    const stranger = await freshForms();
    const form = await owner.createOk();
    for (const [method, path] of [
      ['GET', `/api/v1/forms/${form.id}`],
      ['PUT', `/api/v1/forms/${form.id}`],
      ['DELETE', `/api/v1/forms/${form.id}`],
      ['POST', `/api/v1/forms/${form.id}/toggle`],
      ['GET', `/api/v1/forms/${form.id}/submissions`],
      ['GET', `/api/v1/forms/${form.id}/embed/html`],
    ] as const) {
      const res = await stranger.call(method, path, method === 'PUT' ? { name: 'mine' } : undefined);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(res.body)).not.toContain(form.uuid);
    }
    expect((await stranger.call('GET', '/api/v1/forms/abc')).status).toBe(400);
    expect((await stranger.call('GET', '/api/v1/forms/99999999999')).status).toBe(400);

    expect((await owner.submit(form.uuid, { name: 'Ann', email: 'ann@example.com' })).status).toBe(201);
    const del = await owner.call('DELETE', `/api/v1/forms/${form.id}`);
    expect(del.status).toBe(200);
    expect((await owner.call('GET', `/api/v1/forms/${form.id}`)).status).toBe(404);
    expect((await owner.submit(form.uuid, { name: 'Ann', email: 'ann@example.com' })).status).toBe(404);
  });

  it('gives snippets for html, react and curl', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    for (const kind of ['html', 'react', 'curl']) {
      const res = await api.call('GET', `/api/v1/forms/${form.id}/embed/${kind}`);
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(res.body.snippet).toContain(`/f/${form.uuid}`);
    }
  });

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

  it('marks, deletes and exports submissions', async () => {
    const api = await freshForms();
    const form = await api.createOk();
    await api.submit(form.uuid, { name: 'Ann', email: 'ann@example.com', message: '=HYPERLINK("x")' });
    await api.submit(form.uuid, { name: 'Bo, "Jr"', email: 'bo@example.com' });
    const list = await api.call('GET', `/api/v1/forms/${form.id}/submissions`);
    const [first, second] = list.body.submissions as Json[];
    const path = `/api/v1/forms/${form.id}/submissions/${first!.uuid}`;

    const read = await api.call('PATCH', path, { is_read: true, is_archived: true });
    expect(read.status).toBe(200);
    expect(read.body.submission).toMatchObject({ is_read: true, is_archived: true });
    expect(read.body.submission.read_at).toBeTypeOf('string');
    const stats = (await api.call('GET', `/api/v1/forms/${form.id}/submissions`)).body.stats;
    expect(stats).toMatchObject({ total: 2, archived: 1, unread: 1 });
    const archived = await api.call('GET', `/api/v1/forms/${form.id}/submissions?is_archived=false`);
    expect(archived.body.submissions.map((s: Json) => s.uuid)).toEqual([second!.uuid]);
    const unread = await api.call('PATCH', path, { is_read: false });
    expect(unread.body.submission).toMatchObject({ is_read: false, read_at: null });
    expect((await api.call('PATCH', path, {})).status).toBe(400);
    expect((await api.call('PATCH', path, { is_read: 'yes' })).status).toBe(400);

    const future = new Date(Date.now() + 3_600_000).toISOString();
    const none = await api.call(
      'GET',
      `/api/v1/forms/${form.id}/submissions?from_date=${encodeURIComponent(future)}`,
    );
    expect(none.body.submissions).toEqual([]);
    expect((await api.call('GET', `/api/v1/forms/${form.id}/submissions?from_date=yesterday`)).status).toBe(
      400,
    );
    expect((await api.call('GET', `/api/v1/forms/${form.id}/submissions?per_page=101`)).status).toBe(400);

    const csv = await fixture.hp.request(`/api/v1/forms/${form.id}/submissions/export`, {
      headers: { 'x-api-key': api.site.apiKey },
    });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/text\/csv/);
    const text = await csv.text();
    const lines = text.trim().split('\n');
    expect(lines[0]).toBe(
      'submitted_at,uuid,name,email,topic,message,is_spam,spam_score,is_read,is_archived',
    );
    expect(lines).toHaveLength(3);
    expect(text).toContain(`"'=HYPERLINK(""x"")"`);
    expect(text).toContain('"Bo, ""Jr"""');

    expect((await api.call('DELETE', path)).status).toBe(200);
    expect((await api.call('DELETE', path)).status).toBe(404);
    expect((await api.call('GET', `/api/v1/forms/${form.id}`)).body.form.submission_count).toBe(1);
  });
});
