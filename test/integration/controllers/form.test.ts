import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FORM_FINALIZER,
  FORM_ID_ANNOTATION,
  FORM_ID_LABEL,
  SITE_LABEL,
  apiStatus,
  resourceClient,
  type FormResource,
  type FormSpec,
  type ResourceClient,
} from '../../../src/kube/index.js';
import type { RunningController } from '../../../src/server/index.js';
import { eventually, startClusterFixture, type ClusterFixture } from '../../support/kube/cluster.js';
import { readySite, startWithChartRbac } from '../../support/kube/cluster-api.js';
import { contactFields, formsApi, type FormsApi, type Json } from '../../support/forms-api.js';
import type { TestHostplane } from '../../support/hostplane.js';

let fx: ClusterFixture;
let controller: RunningController;
/** The API in cluster mode, on the fixture's database, acting as the chart's api ServiceAccount. */
let api: TestHostplane;
let forms: ResourceClient<FormResource>;
let shop: FormsApi;

beforeAll(async () => {
  fx = await startClusterFixture();
  ({ controller, api } = await startWithChartRbac(fx));
  forms = resourceClient('Form', fx.env.kubeConfig(), fx.namespace, 'test');
  const { siteId, apiKey } = await readySite(fx, 'shop', 'shop@example.com');
  shop = formsApi(api, { siteId, accountId: 0, slug: 'shop', apiKey, email: '' });
}, 180_000);

afterAll(async () => {
  await api?.stop();
  await fx?.stop();
});

const isReady = (form: FormResource | undefined) =>
  form?.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True') &&
  form.status.observedGeneration === form.metadata.generation
    ? form
    : undefined;

const waitReady = (name: string) =>
  eventually(`Form ${name} to be Ready`, async () => isReady(await forms.get(name)));

const applyForm = (name: string, spec: Partial<FormSpec>, annotations?: Record<string, string>) =>
  forms.create({
    metadata: { name, ...(annotations ? { annotations } : {}) },
    spec: { siteRef: { name: 'shop' }, ...spec } as FormSpec,
  });

const dbForm = (id: number) => fx.hostplane.services.forms.byId(id);

async function countRows(query: ReturnType<typeof sql>): Promise<number> {
  const result = (await fx.hostplane.services.store.db.execute(query)) as unknown as {
    rows: { n: string | number }[];
  };
  return Number(result.rows[0]?.n ?? 0);
}

async function eventsOf(name: string): Promise<{ reason?: string; message?: string }[]> {
  const list = await fx.core.listNamespacedEvent({
    namespace: fx.namespace,
    fieldSelector: `involvedObject.name=${name},involvedObject.kind=Form`,
  });
  return list.items;
}

/** Posts a legitimate submission (filled after 10 s, from its own address) to a submission URL. */
const submit = (form: { uuid?: string }, data: Json = {}) =>
  shop.submit(form.uuid ?? '', { name: 'Ada', email: 'ada@example.com', message: 'Hello there', ...data });

describe('a form created through the API', () => {
  let form: Json;

  beforeAll(async () => {
    form = await shop.createOk({ name: 'Contact', fields: contactFields });
  });

  it('gets its Form resource when the API answers: named after site and form, labelled, annotated', async () => {
    const resource = await forms.get('shop-contact');
    expect(resource?.spec).toEqual({ siteRef: { name: 'shop' }, name: 'Contact', active: true });
    expect(resource?.metadata.annotations?.[FORM_ID_ANNOTATION]).toBe(String(form.id));
    expect(resource?.metadata.labels).toMatchObject({
      [FORM_ID_LABEL]: String(form.id),
      [SITE_LABEL]: 'shop',
    });
  });

  it('is linked by the controller: finalizer, Ready with the form id, uuid, URL and counts', async () => {
    const resource = await waitReady('shop-contact');
    expect(resource.metadata.finalizers).toContain(FORM_FINALIZER);
    expect(resource.status).toMatchObject({
      formId: form.id,
      uuid: form.uuid,
      submissionUrl: form.submission_url,
      submissionCount: 0,
      spamCount: 0,
    });
    expect((await dbForm(form.id))?.resourceUid).toBe(resource.metadata.uid);
  });

  it('writes API changes back into the resource, and the resync keeps them', async () => {
    const put = await shop.call('PUT', `/api/v1/forms/${form.id}`, {
      name: 'Contact us',
      notification_email: 'sales@example.com',
    });
    expect(put.status).toBe(200);
    expect((await forms.get('shop-contact'))?.spec).toMatchObject({
      name: 'Contact us',
      notificationEmail: 'sales@example.com',
    });
    expect((await shop.call('POST', `/api/v1/forms/${form.id}/toggle`)).body.is_active).toBe(false);
    expect((await forms.get('shop-contact'))?.spec.active).toBe(false);
    // Removing the address removes it from the resource too (not left to whoever set it).
    await shop.call('PUT', `/api/v1/forms/${form.id}`, { notification_email: null });
    expect((await forms.get('shop-contact'))?.spec.notificationEmail).toBeUndefined();

    // A whole pass that started after the changes (the controller writes the resource's spec into
    // the database) leaves the API's values in place.
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    await waitReady('shop-contact');
    expect(await dbForm(form.id)).toMatchObject({
      name: 'Contact us',
      isActive: false,
      notificationEmail: null,
    });
  });

  it('a burst of API changes ends as the last one left it, in PostgreSQL and in the resource', async () => {
    // Each change lands in the database first, then in the resource: a controller pass holding
    // an older copy of the resource must not write that copy back over a newer API change.
    // Read first: the test must not depend on what an earlier test (or a -t filter) left.
    const start = (await dbForm(form.id))!;
    for (let i = 1; i <= 8; i++) {
      await shop.call('PUT', `/api/v1/forms/${form.id}`, { name: `Contact ${i}` });
      await shop.call('POST', `/api/v1/forms/${form.id}/toggle`);
    }
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    await waitReady('shop-contact');
    // Eight toggles: back where it started.
    expect(await dbForm(form.id)).toMatchObject({ name: 'Contact 8', isActive: start.isActive });
    expect((await forms.get('shop-contact'))?.spec).toMatchObject({
      name: 'Contact 8',
      active: start.isActive,
    });
  });

  it('concurrent API changes: an apply holding an older state never lands over a newer one', async () => {
    // Each apply writes the form as it is when the resource is written, conditional on the
    // resource it read; an older one landing last would hand the controller a stale spec.
    const start = (await dbForm(form.id))!;
    const toggles = Array.from({ length: 6 }, () => shop.call('POST', `/api/v1/forms/${form.id}/toggle`));
    expect((await Promise.all(toggles)).map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    await waitReady('shop-contact');
    // Six toggles, one after another under the row lock: back where it started.
    expect(await dbForm(form.id)).toMatchObject({ isActive: start.isActive });
    expect((await forms.get('shop-contact'))?.spec.active).toBe(start.isActive);
  });

  it('deleted through the API: its resource goes too, and no resync brings either back', async () => {
    expect((await shop.call('DELETE', `/api/v1/forms/${form.id}`)).status).toBe(200);
    // Asked by the API before it answered (the finalizer may still be running).
    const deleting = await forms.get('shop-contact');
    expect(deleting === undefined || deleting.metadata.deletionTimestamp !== undefined).toBe(true);
    await eventually('the Form resource to be gone', async () => !(await forms.get('shop-contact')));
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    expect(await forms.get('shop-contact')).toBeUndefined();
    expect(await dbForm(form.id)).toBeUndefined();
  });
});

describe('a Form applied with kubectl', () => {
  let adopted: FormResource;

  beforeAll(async () => {
    await applyForm('newsletter', { name: 'Newsletter', notificationEmail: 'news@example.com' });
    adopted = await waitReady('newsletter');
  });

  it('is adopted: a form on the Site’s site with the default fields, labelled and linked', async () => {
    const formId = adopted.status?.formId ?? 0;
    const row = await dbForm(formId);
    expect(row).toMatchObject({
      siteId: shop.site.siteId,
      name: 'Newsletter',
      isActive: true,
      notificationEmail: 'news@example.com',
      resourceUid: adopted.metadata.uid,
    });
    expect(row?.fields.map((f) => [f.name, f.type, f.required])).toEqual([
      ['name', 'text', true],
      ['email', 'email', true],
      ['message', 'textarea', true],
    ]);
    expect(adopted.status).toMatchObject({
      uuid: row?.uuid,
      submissionUrl: `http://localhost:8080/f/${row?.uuid}`,
    });
    expect(adopted.metadata.annotations?.[FORM_ID_ANNOTATION]).toBe(String(formId));
    expect(adopted.metadata.labels?.[FORM_ID_LABEL]).toBe(String(formId));
    // The API finds it like any of its forms.
    expect((await shop.call('GET', `/api/v1/forms/${formId}`)).body.form.name).toBe('Newsletter');
    await eventually('the Adopted event', async () =>
      (await eventsOf('newsletter')).some((e) => e.reason === 'Adopted'),
    );
  });

  it('has a working submission URL, and the counts in its status follow the submissions', async () => {
    expect((await submit(adopted.status ?? {})).status).toBe(201);
    // Honeypot filled: stored in the spam bin.
    const bot = { name: 'Bot', email: 'bot@example.com', message: 'Buy now' };
    expect((await shop.submit(adopted.status?.uuid ?? '', bot, { trap: 'bot' })).status).toBe(201);
    const counted = await eventually('the status to count both', async () => {
      const f = await forms.get('newsletter');
      return f?.status?.submissionCount === 2 ? f : undefined;
    });
    expect(counted.status?.spamCount).toBe(1);
  });

  it('spec changes reach PostgreSQL: name, active, notification address removed', async () => {
    const current = (await forms.get('newsletter'))!;
    await forms.replace({
      ...current,
      spec: { siteRef: { name: 'shop' }, name: 'Weekly news', active: false },
    });
    const formId = adopted.status?.formId ?? 0;
    const row = await eventually('the database to follow', async () => {
      const r = await dbForm(formId);
      return r?.name === 'Weekly news' ? r : undefined;
    });
    expect(row).toMatchObject({ isActive: false, notificationEmail: null });
    // Inactive: the public URL refuses new submissions.
    expect((await submit(adopted.status ?? {})).status).toBe(403);
  });

  it('refuses to move to another Site (siteRef is immutable)', async () => {
    // The controller may write the status between the read and the replace (409 Conflict on the
    // resourceVersion): read again until the apiserver judges the change itself.
    let status: number | undefined;
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = (await forms.get('newsletter'))!;
      status = await forms
        .replace({ ...current, spec: { ...current.spec, siteRef: { name: 'elsewhere' } } })
        .then(
          () => 200,
          (err: unknown) => apiStatus(err),
        );
      if (status !== 409) break;
    }
    expect(status).toBe(422);
  });

  it('deleted: the form, its submissions and its pending mail go before the resource does', async () => {
    await forms.replace({
      ...(await forms.get('newsletter'))!,
      spec: { siteRef: { name: 'shop' }, name: 'Weekly news', active: true },
    });
    const formId = adopted.status?.formId ?? 0;
    await eventually('the form to be active again', async () => (await dbForm(formId))?.isActive);
    expect((await submit(adopted.status ?? {}, { message: 'mail me' })).status).toBe(201);
    const source = `form:${formId}`;
    // The first submission's mail was never queued: the resource's news@example.com was not
    // confirmed (docs/developers/security.md "Form notification addresses"); this one goes to the account's address.
    expect(await countRows(sql`select count(*) as n from mail_outbox where source = ${source}`)).toBe(1);
    expect(await countRows(sql`select count(*) as n from form_submissions where form_id = ${formId}`)).toBe(
      3,
    );

    await forms.delete('newsletter');
    await eventually('the Form resource to be gone', async () => !(await forms.get('newsletter')));
    expect(await dbForm(formId)).toBeUndefined();
    expect(await countRows(sql`select count(*) as n from form_submissions where form_id = ${formId}`)).toBe(
      0,
    );
    expect(await countRows(sql`select count(*) as n from mail_outbox where source = ${source}`)).toBe(0);
    expect((await submit(adopted.status ?? {})).status).toBe(404);
    expect((await eventsOf('newsletter')).some((e) => e.reason === 'Deleted')).toBe(true);

    // No resurrection: a whole resync pass after the delete creates neither the form nor a resource.
    expect(await controller.manager.nextResync()).toEqual({ failed: [] });
    expect(await forms.get('newsletter')).toBeUndefined();
    expect((await forms.list()).map((f) => f.spec.name)).not.toContain('Weekly news');
    expect(await dbForm(formId)).toBeUndefined();
  });
});

describe('two ways in, one state', () => {
  it('a database form without a resource (its apply failed) gets one from the resync', async () => {
    // The plain service (as if the API's apply had failed): nothing is applied.
    const row = await fx.hostplane.services.forms.create(shop.site.siteId, {
      name: 'Quote request',
      fields: contactFields as never,
    });
    const resource = await waitReady('shop-quote-request');
    expect(resource.metadata.annotations?.[FORM_ID_ANNOTATION]).toBe(String(row.id));
    expect(resource.status?.formId).toBe(row.id);
    expect((await dbForm(row.id))?.resourceUid).toBe(resource.metadata.uid);
  });

  it('a database change whose write-back failed reaches the resource through the resync', async () => {
    const row = (await fx.hostplane.services.forms.byId(
      Number((await forms.get('shop-quote-request'))?.status?.formId),
    ))!;
    // The plain service again: the database changes, the resource is not told.
    await fx.hostplane.services.forms.update({ siteId: row.siteId }, row.id, {
      name: 'Quotes',
      notification_email: 'quotes@example.com',
    });
    const resource = await eventually('the resource to follow', async () => {
      const f = await forms.get('shop-quote-request');
      return f?.spec.name === 'Quotes' ? f : undefined;
    });
    expect(resource.spec.notificationEmail).toBe('quotes@example.com');
    expect((await waitReady('shop-quote-request')).status?.formId).toBe(row.id);
    expect((await dbForm(row.id))?.name).toBe('Quotes');
  });

  it('a resource naming a form that no longer exists is deleted, never adopted', async () => {
    const before = (await fx.hostplane.services.forms.list({ siteId: shop.site.siteId })).length;
    await applyForm('stale', { name: 'Stale' }, { [FORM_ID_ANNOTATION]: '987654' });
    await eventually('the stale resource to be deleted', async () => !(await forms.get('stale')));
    expect((await fx.hostplane.services.forms.list({ siteId: shop.site.siteId })).length).toBe(before);
  });

  it('a copied annotation does not take a form over, and deleting the copy leaves the form alone', async () => {
    const original = await shop.createOk({ name: 'Support', fields: contactFields });
    await waitReady('shop-support');
    await applyForm('copy', { name: 'Hijacked' }, { [FORM_ID_ANNOTATION]: String(original.id) });
    await eventually('the copy to be refused', async () => {
      const f = await forms.get('copy');
      return f?.status?.conditions?.[0]?.reason === 'FormClaimed';
    });
    expect((await dbForm(original.id))?.name).toBe('Support');
    await forms.delete('copy');
    await eventually('the copy to be gone', async () => !(await forms.get('copy')));
    expect(await dbForm(original.id)).toBeDefined();
  });

  it('a Form naming a Site that does not exist is not Ready and creates nothing', async () => {
    await forms.create({
      metadata: { name: 'orphan' },
      spec: { siteRef: { name: 'nowhere' }, name: 'Orphan' } as FormSpec,
    });
    const orphan = await eventually('the refusal', async () => {
      const f = await forms.get('orphan');
      return f?.status?.conditions?.[0]?.reason === 'SiteNotFound' ? f : undefined;
    });
    expect(orphan.status?.conditions?.[0]?.status).toBe('False');
    expect(orphan.status?.formId).toBeUndefined();
    await forms.delete('orphan');
    await eventually('the orphan to be gone', async () => !(await forms.get('orphan')));
  });
});
