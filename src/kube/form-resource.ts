import { isConflict, isNotFound } from './api-client.js';
import { FORM_ID_ANNOTATION, FORM_ID_LABEL, SITE_LABEL } from './client.js';
import type { ResourceClient } from './resource-client.js';
import type { FormResource, FormSpec } from './resources.js';

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
          annotations: { [FORM_ID_ANNOTATION]: id },
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

/**
 * Makes the form's resource say what the database says: the spec fields it carries are merged
 * into an existing resource (a removed notification address is removed), or the resource is
 * created.
 */
export async function syncFormResource(
  resources: ResourceClient<FormResource>,
  record: FormRecord,
): Promise<{ name: string; result: 'created' | 'exists' | 'updated' | 'unchanged' }> {
  const existing = await findFormResource(resources, record.formId);
  if (!existing) return createFormResource(resources, record);
  const { name } = existing.metadata;
  const spec = existing.spec;
  if (
    spec.name === record.name &&
    spec.active === record.active &&
    (spec.notificationEmail ?? null) === record.notificationEmail
  ) {
    return { name, result: 'unchanged' };
  }
  await resources.patchSpec(name, {
    name: record.name,
    active: record.active,
    notificationEmail: record.notificationEmail,
  });
  return { name, result: 'updated' };
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
