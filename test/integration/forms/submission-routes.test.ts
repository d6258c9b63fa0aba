import { describe, expect, it } from 'vitest';
import { hostplaneWithFreshSites } from '../../support/files-api.js';
import { formsApi, type Json } from '../../support/forms-api.js';
import { backends } from '../../support/hostplane.js';

describe.each(backends)('forms API on %s', (backend) => {
  const fixture = hostplaneWithFreshSites(backend, `forms-${backend.replace(/\W/g, '')}`);
  const freshForms = async (plan: Parameters<typeof fixture.freshSite>[0] = 'free') =>
    formsApi(fixture.hp, (await fixture.freshSite(plan)).site);

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
