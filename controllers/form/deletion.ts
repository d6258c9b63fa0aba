import { isAppError } from '../../src/errors/index.js';
import type { FormResource } from '../../src/kube/index.js';
import type { Cleanup } from '../runtime/reconcile.js';
import type { FormContext } from './context.js';
import { annotatedFormId, claimAnnotated } from './database-link.js';

/**
 * Behind the finalizer of a deleted Form: the form it controls is deleted with its submissions
 * (cascade) and its pending notification mail (FormsService.delete's purge hook, same
 * transaction), then the finalizer goes. Only a form this resource controls is touched: a
 * refused resource (claimed form, other site) owns nothing.
 */
export async function cleanUpForm(
  context: FormContext,
  resource: FormResource,
): Promise<Cleanup<FormResource>> {
  const { forms, events } = context;
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
  return { release: resource };
}
