import { z } from 'zod';
import { isConflict, isNotFound } from './api-client.js';
import { FORM_APPLIED_ANNOTATION, FORM_ID_ANNOTATION, FORM_ID_LABEL, SITE_LABEL } from './client.js';
import type { ResourceClient } from './resource-client.js';
import type { FormResource } from './resource-kinds.js';
import type { FormSpec } from './resources.js';

/** What a database form says about its Form resource (the API and the controller's resync write it). */
export interface FormRecord {
  formId: number;
  /** The Site resource of the form's site: its name is the Form's siteRef. */
  siteResourceName: string;
  siteSlug: string;
  formSlug: string;
  name: string;
  active: boolean;
  notificationEmail: string | null;
}

/** The spec fields the database also holds: what the two sides keep equal. */
export interface FormFields {
  name: string;
  active: boolean;
  notificationEmail: string | null;
}

const formFieldsSchema = z.object({
  name: z.string(),
  active: z.boolean(),
  notificationEmail: z.string().nullable(),
});

export function formFieldsOf(source: FormFields | FormSpec): FormFields {
  return { name: source.name, active: source.active, notificationEmail: source.notificationEmail ?? null };
}

export function sameFormFields(a: FormFields, b: FormFields): boolean {
  return a.name === b.name && a.active === b.active && a.notificationEmail === b.notificationEmail;
}

/** The value of FORM_APPLIED_ANNOTATION for `fields`. */
export function appliedAnnotation(fields: FormFields): string {
  return JSON.stringify(formFieldsOf(fields));
}

/** What the resource's FORM_APPLIED_ANNOTATION says; undefined when it has none (or not a valid one). */
export function appliedFields(resource: FormResource): FormFields | undefined {
  const value = resource.metadata.annotations?.[FORM_APPLIED_ANNOTATION];
  if (value === undefined) return undefined;
  try {
    const parsed = formFieldsSchema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Resource names are at most 63 characters (the CRD's rule), lower-case DNS labels joined by '-'. */
const MAX_NAME = 63;

/** `<site slug>-<form slug>`, cut to 63 characters; e.g. `blog-contact`. */
export function formResourceName(siteSlug: string, formSlug: string): string {
  return `${siteSlug}-${formSlug}`.slice(0, MAX_NAME).replace(/-+$/, '');
}

/** The fields of a Form's spec that the database also holds, as the database has them. */
export function formSpecOf(record: FormRecord): FormSpec {
  return {
    siteRef: { name: record.siteResourceName },
    name: record.name,
    active: record.active,
    ...(record.notificationEmail ? { notificationEmail: record.notificationEmail } : {}),
  };
}

/** The Form resource of a database form: found by its form-id label. */
export async function findFormResource(
  resources: ResourceClient<FormResource>,
  formId: number,
): Promise<FormResource | undefined> {
  const [found] = await resources.list(`${FORM_ID_LABEL}=${formId}`);
  return found;
}

/**
 * Creates the Form resource of a database form, annotated and labelled with its id (so the
 * controller links rather than adopts it). The derived name may be taken by another form's
 * resource (`a` + `b-c` and `a-b` + `c`): then `form-<id>`. Returns the name it lives under.
 */
export async function createFormResource(
  resources: ResourceClient<FormResource>,
  record: FormRecord,
): Promise<{ name: string; result: 'created' | 'exists' }> {
  const id = String(record.formId);
  for (const name of [formResourceName(record.siteSlug, record.formSlug), `form-${id}`]) {
    try {
      await resources.create({
        metadata: {
          name,
          annotations: { [FORM_ID_ANNOTATION]: id, [FORM_APPLIED_ANNOTATION]: appliedAnnotation(record) },
          labels: { [FORM_ID_LABEL]: id, [SITE_LABEL]: record.siteResourceName },
        },
        spec: formSpecOf(record),
      });
      return { name, result: 'created' };
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
    // Already there: ours (a concurrent create by the API or the resync) or another form's.
    const existing = await resources.get(name);
    if (existing?.metadata.annotations?.[FORM_ID_ANNOTATION] === id) return { name, result: 'exists' };
  }
  throw new Error(`no free name for the Form resource of form ${id}`);
}

/** Conditional writes lost to a concurrent writer before an apply gives up (the resync repairs). */
const APPLY_ATTEMPTS = 5;

/**
 * Makes the form's resource say what the database says now, stamped with it: `current` reads the
 * form after the resource was read, and the patch is conditional on that read, so an apply
 * holding an older database state loses (409) and reads both again; it never overwrites a newer
 * one. A resource whose stamp already says what the database says is left alone (a different
 * spec is an edit made in the cluster, which the controller writes into the database). Creates
 * the resource when there is none; `gone` when the form was deleted meanwhile.
 */
export async function syncFormResource(
  resources: ResourceClient<FormResource>,
  formId: number,
  current: () => Promise<FormRecord | undefined>,
): Promise<{ result: 'created' | 'updated' | 'unchanged' | 'gone' }> {
  for (let attempt = 1; attempt <= APPLY_ATTEMPTS; attempt++) {
    const existing = await findFormResource(resources, formId);
    const record = await current();
    if (!record) return { result: 'gone' };
    if (!existing) {
      // 'exists': created meanwhile (by the resync), maybe from an older state: look again.
      if ((await createFormResource(resources, record)).result === 'created') return { result: 'created' };
      continue;
    }
    const fields = formFieldsOf(record);
    const applied = appliedFields(existing);
    if (applied && sameFormFields(applied, fields)) return { result: 'unchanged' };
    try {
      await resources.patchSpec(existing.metadata.name, fields, {
        resourceVersion: existing.metadata.resourceVersion,
        annotations: { [FORM_APPLIED_ANNOTATION]: appliedAnnotation(fields) },
      });
      return { result: 'updated' };
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error(`the Form resource of form ${formId} kept changing while it was applied`);
}

/** Deletes the Form resources of a deleted database form; returns how many it asked to delete. */
export async function deleteFormResources(
  resources: ResourceClient<FormResource>,
  formId: number,
): Promise<number> {
  const found = await resources.list(`${FORM_ID_LABEL}=${formId}`);
  for (const resource of found) {
    try {
      await resources.delete(resource.metadata.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return found.length;
}
