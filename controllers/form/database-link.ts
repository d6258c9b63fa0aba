import { isAppError } from '../../src/errors/index.js';
import type { FormRow } from '../../src/forms/index.js';
import {
  FORM_ID_ANNOTATION,
  FORM_ID_LABEL,
  SITE_LABEL,
  type FormResource,
  type FormSpec,
} from '../../src/kube/index.js';
import { isRefusal, type Refusal } from '../runtime/reconcile.js';
import { ADOPTED_FORM_FIELDS, type FormContext } from './context.js';

/** The database form a Form resource controls, and the resource as last written. */
export interface Linked {
  form: FormRow;
  /** Linking may annotate and label the resource: later writes need its new resourceVersion. */
  resource: FormResource;
}

/** The resource names a form (its form-id annotation) that no longer exists: deleted by the API. */
export interface Stale {
  staleFormId: number;
}

/**
 * The database form this resource controls, claimed by the resource's uid (so a copied
 * annotation cannot take a form over): the one it already controls; else the annotated one
 * (created by the API or the resync), if it belongs to the site of the resource's siteRef and no
 * other live resource holds it; else adoption: a new form on that site, created with the uid in
 * one statement, so that a crash before the annotation never creates it twice.
 */
export async function linkForm(
  context: FormContext,
  resource: FormResource,
  spec: FormSpec,
): Promise<Linked | Refusal | Stale> {
  const { forms, events } = context;
  const uid = resource.metadata.uid ?? '';
  const controlled = await forms.byResourceUid(uid);
  if (controlled) return { form: controlled, resource: await markLinked(context, resource, controlled.id) };

  const annotated = annotatedFormId(resource);
  if (annotated !== undefined) return claimAnnotated(context, resource, spec, annotated);

  const site = await siteOf(context, spec.siteRef.name);
  if (isRefusal(site)) return site;
  try {
    const form = await forms.create(
      site.siteId,
      {
        name: spec.name,
        fields: [...ADOPTED_FORM_FIELDS],
        is_active: spec.active,
        notification_email: spec.notificationEmail ?? null,
      },
      uid,
    );
    const marked = await markLinked(context, resource, form.id);
    events.normal(
      marked,
      'Adopted',
      `created form ${form.id} on site ${site.siteId} with the fields name, email and message`,
    );
    return { form, resource: marked };
  } catch (err) {
    if (isAppError(err, 'FORM_LIMIT')) return { refused: err.message, reason: 'FormLimit' };
    throw err;
  }
}

/**
 * Claims the form named by the resource's annotation. Used by the finalizer too: a resource the
 * API created and that is deleted before its first pass still takes its form with it.
 */
export async function claimAnnotated(
  context: FormContext,
  resource: FormResource,
  spec: FormSpec,
  formId: number,
): Promise<Linked | Refusal | Stale> {
  const uid = resource.metadata.uid ?? '';
  const row = await context.forms.byId(formId);
  if (!row) return { staleFormId: formId };
  const site = await siteOf(context, spec.siteRef.name);
  if (isRefusal(site)) return site;
  if (site.siteId !== row.siteId) {
    return {
      refused: `form ${formId} belongs to another site than Site ${spec.siteRef.name}`,
      reason: 'SiteMismatch',
    };
  }
  const isLive = (holder: string): boolean =>
    context.formResources.list().some((f) => f.metadata.uid === holder);
  const claimed = await context.forms.claimForResource(formId, uid, isLive);
  if (claimed === 'missing') return { staleFormId: formId };
  if (claimed === 'held') {
    return { refused: `form ${formId} is controlled by another Form resource`, reason: 'FormClaimed' };
  }
  const marked = await markLinked(context, resource, formId);
  context.events.normal(marked, 'Linked', `linked to form ${formId}`);
  return { form: row, resource: marked };
}

/** The form-id annotation, when it is a valid id. */
export function annotatedFormId(resource: FormResource): number | undefined {
  const value = Number(resource.metadata.annotations?.[FORM_ID_ANNOTATION]);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

/**
 * The site behind a Site resource: the one that resource controls (by its uid), so a Form can
 * only be adopted onto a site through the Site resource that owns it.
 */
async function siteOf(context: FormContext, siteName: string): Promise<{ siteId: number } | Refusal> {
  const site = context.sites.get(context.clients.namespace, siteName);
  if (!site) return { refused: `Site ${siteName} does not exist`, reason: 'SiteNotFound' };
  const routing = await context.platform.siteRoutingOfResource(site.metadata.uid ?? '');
  if (!routing) return { refused: `Site ${siteName} is not linked to a site yet`, reason: 'SiteNotReady' };
  return { siteId: routing.siteId };
}

/**
 * The id annotation (what the resync and the finalizer read) and the id and site labels (what the
 * API selects by), written once.
 */
async function markLinked(
  context: FormContext,
  resource: FormResource,
  formId: number,
): Promise<FormResource> {
  const id = String(formId);
  const { annotations = {}, labels = {} } = resource.metadata;
  const siteName = resource.spec.siteRef.name;
  if (
    annotations[FORM_ID_ANNOTATION] === id &&
    labels[FORM_ID_LABEL] === id &&
    labels[SITE_LABEL] === siteName
  ) {
    return resource;
  }
  return context.clients.forms.patchMetadata(resource, {
    annotations: { [FORM_ID_ANNOTATION]: id },
    labels: { [FORM_ID_LABEL]: id, [SITE_LABEL]: siteName },
  });
}
