import { describe, expect, it } from 'vitest';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { contactFields, formsApi, type Json } from '../../support/forms-api.js';
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
});
