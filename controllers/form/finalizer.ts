import { isAppError } from '../../src/errors/index.js';
import { FORM_FINALIZER, type FormResource } from '../../src/kube/index.js';
import { hasFinalizer, releaseFinalizer } from '../runtime/reconcile-helpers.js';
import type { FormContext } from './context.js';
import { annotatedFormId, claimAnnotated } from './database-link.js';

/**
 * Behind the finalizer of a deleted Form: the form it controls is deleted with its submissions
 * (cascade) and its pending notification mail (FormsService.delete's purge hook, same
 * transaction), then the finalizer goes. Only a form this resource controls is touched: a
 * refused resource (claimed form, other site) owns nothing.
 */
export async function finalizeForm(context: FormContext, resource: FormResource): Promise<void> {
  if (!hasFinalizer(resource, FORM_FINALIZER)) return;
  const { forms, events, clients } = context;
  let form = await forms.byResourceUid(resource.metadata.uid ?? '');
  const annotated = annotatedFormId(resource);
  if (!form && annotated !== undefined) {
    // Created by the API and deleted before a pass linked it: still its form.
    const claimed = await claimAnnotated(context, resource, resource.spec, annotated);
    if ('form' in claimed) ({ form, resource } = claimed);
  }
  if (form) {
    const { total } = await forms.submissionCounts(form.id);
    try {
      await forms.delete({ siteId: form.siteId }, form.id);
    } catch (err) {
      if (!isAppError(err, 'NOT_FOUND')) throw err; // deleted meanwhile: nothing left to do
    }
    events.normal(resource, 'Deleted', `deleted form ${form.id} with its ${total} submissions`);
  }
  await releaseFinalizer(clients.forms, resource, FORM_FINALIZER);
}
