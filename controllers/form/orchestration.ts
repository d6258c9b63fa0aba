import type { FormRow, ResourceFields } from '../../src/forms/index.js';
import {
  FORM_APPLIED_ANNOTATION,
  appliedAnnotation,
  appliedFields,
  formFieldsOf,
  isNotFound,
  sameFormFields,
  type FormFields,
  type FormResource,
  type FormSpec,
} from '../../src/kube/index.js';
import type { ReconcileResult } from '../runtime/controller.js';
import { CONFLICT_RETRY_MS, isRefusal, type RefusedOn } from '../runtime/reconcile.js';
import type { FormContext } from './context.js';
import { linkForm } from './database-link.js';
import { writeLinkedStatus } from './status.js';

/**
 * A live Form with a valid spec: the form exists in the database (database-link.ts: adopted with
 * a default field set when the resource came first), the database and the spec say the same for
 * the fields the spec carries (name, active, notification address), whichever side changed
 * (changedSide), and the status reports the form's id, URL and counts (status.ts).
 */
export async function orchestrateForm(
  context: FormContext,
  resource: FormResource,
  spec: FormSpec,
): Promise<ReconcileResult | RefusedOn<FormResource> | void> {
  const linked = await linkForm(context, resource, spec);
  if ('staleFormId' in linked) {
    // The API deleted the form and could not delete this resource: finish that delete (the
    // finalizer finds no form to purge). Adopting it again would resurrect a deleted form.
    context.events.normal(
      resource,
      'FormDeleted',
      `form ${linked.staleFormId} no longer exists; deleting this resource`,
    );
    try {
      await context.clients.forms.delete(resource.metadata.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return;
  }
  if (isRefusal(linked)) return { ...linked, resource };

  const { form, resource: current } = linked;
  const database = fieldsOfForm(form);
  const wanted = formFieldsOf(spec);
  const applied = appliedFields(current);
  switch (changedSide(current, applied, database, wanted)) {
    case 'database':
      if (applied && !sameFormFields(applied, wanted)) {
        context.events.warning(
          current,
          'EditOverridden',
          'the spec was edited while the form changed through the API: the API’s change wins',
        );
      }
      // Conditional: a resource changed meanwhile answers 409 and is looked at again. The
      // patch's watch event brings the next pass, which reports the status.
      await context.clients.forms.patchSpec(current.metadata.name, database, {
        resourceVersion: current.metadata.resourceVersion,
        annotations: { [FORM_APPLIED_ANNOTATION]: appliedAnnotation(database) },
      });
      return;
    case 'resource': {
      const updated = await context.forms.updateFromResource(form.id, rowFields(database), rowFields(wanted));
      // The form changed since it was read: the next pass decides again from what it holds then.
      if (!updated) return { requeueAfterMs: CONFLICT_RETRY_MS };
      await stamp(context, current, applied, fieldsOfForm(updated));
      return;
    }
    case 'none':
      if (await stamp(context, current, applied, database)) return;
      await writeLinkedStatus(context, current, form);
  }
}

/**
 * Which side holds a change the other lacks. The resource's stamp (FORM_APPLIED_ANNOTATION) is
 * what the database held when the two were last in line: a database that differs from it
 * changed since (through the API) and wins, even over a spec edited meanwhile, as the API's own
 * write-back would; otherwise a spec that differs from it was edited in the cluster. Generation
 * cannot tell: the API's write-backs raise it too, and a pass holding an older copy would write
 * that copy over a newer API change. An unstamped resource (made before the stamp existed) falls
 * back to it: a spec this controller has not observed yet wins.
 */
function changedSide(
  resource: FormResource,
  applied: FormFields | undefined,
  database: FormFields,
  wanted: FormFields,
): 'none' | 'resource' | 'database' {
  if (sameFormFields(database, wanted)) return 'none';
  if (applied) return sameFormFields(applied, database) ? 'resource' : 'database';
  return resource.metadata.generation !== resource.status?.observedGeneration ? 'resource' : 'database';
}

/**
 * Stamps the resource with what the form holds, unless it says so already; true when it wrote
 * (the annotation's watch event brings the next pass). Unconditional: it states what the
 * database holds, which stays true on a copy whose spec was edited meanwhile (the next pass
 * writes that edit in), and must land after the database write it follows, or the next pass
 * would take the database for the side that changed.
 */
async function stamp(
  context: FormContext,
  resource: FormResource,
  applied: FormFields | undefined,
  fields: FormFields,
): Promise<boolean> {
  if (applied && sameFormFields(applied, fields)) return false;
  await context.clients.forms.patchAnnotations(resource.metadata.name, {
    [FORM_APPLIED_ANNOTATION]: appliedAnnotation(fields),
  });
  return true;
}

function fieldsOfForm(form: FormRow): FormFields {
  return { name: form.name, active: form.isActive, notificationEmail: form.notificationEmail };
}

function rowFields(fields: FormFields): ResourceFields {
  return { name: fields.name, isActive: fields.active, notificationEmail: fields.notificationEmail };
}
