import type { FormRow } from '../../src/forms/index.js';
import { isNotFound, type FormResource, type FormSpec } from '../../src/kube/index.js';
import type { ReconcileResult } from '../runtime/controller.js';
import { isRefusal, type RefusedOn } from '../runtime/reconcile.js';
import type { FormContext } from './context.js';
import { linkForm } from './database-link.js';
import { writeLinkedStatus } from './status.js';

/**
 * A live Form with a valid spec: the form exists in the database (database-link.ts: adopted with
 * a default field set when the resource came first), the database says what the spec says for
 * the fields the spec carries (name, active, notification address: the resource wins; the API
 * writes its own changes back into the resource), and the status reports the form's id, URL and
 * counts (status.ts).
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

  // Which side changed: a spec this controller has not seen yet (its generation is past the
  // status's) was edited in the cluster and wins; otherwise a difference is an API change whose
  // write-back has not landed (or failed), and goes into the resource. Comparing values alone
  // would let a pass holding an older copy of the resource undo an API change.
  const { form } = linked;
  const specChanged = linked.resource.metadata.generation !== linked.resource.status?.observedGeneration;
  if (!sameFields(form, spec)) {
    if (!specChanged) {
      // Conditional: a spec edited meanwhile answers 409 and wins on the retry. The patch's
      // watch event brings the next pass, which reports the status.
      await context.clients.forms.patchSpec(
        linked.resource.metadata.name,
        { name: form.name, active: form.isActive, notificationEmail: form.notificationEmail },
        linked.resource.metadata.resourceVersion,
      );
      return;
    }
    const updated = await context.forms.update({ siteId: form.siteId }, form.id, {
      name: spec.name,
      is_active: spec.active,
      notification_email: spec.notificationEmail ?? null,
    });
    await writeLinkedStatus(context, linked.resource, updated);
    return;
  }
  await writeLinkedStatus(context, linked.resource, form);
}

/** The database says what the spec says, for the fields the spec carries. */
function sameFields(form: FormRow, spec: FormSpec): boolean {
  return (
    form.name === spec.name &&
    form.isActive === spec.active &&
    form.notificationEmail === (spec.notificationEmail ?? null)
  );
}
