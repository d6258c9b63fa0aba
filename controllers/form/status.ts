import { submissionUrl, type FormRow } from '../../src/forms/index.js';
import type { FormResource } from '../../src/kube/index.js';
import { condition, READY, writeStatusIfChanged } from '../runtime/reconcile-helpers.js';
import type { FormContext } from './context.js';

/**
 * The status of a linked form: its id, public URL and submission counts (read on every pass, so
 * the periodic resync refreshes them), written only when something changed.
 */
export async function writeLinkedStatus(
  context: FormContext,
  resource: FormResource,
  form: FormRow,
): Promise<void> {
  const counts = await context.forms.submissionCounts(form.id);
  await writeStatusIfChanged(context.clients.forms, resource, {
    conditions: [
      condition(
        resource,
        READY,
        'True',
        'Reconciled',
        form.isActive ? 'the form accepts submissions' : 'the form is inactive: it refuses submissions',
      ),
    ],
    formId: form.id,
    uuid: form.uuid,
    submissionUrl: submissionUrl(context.config.baseUrl, form.uuid),
    submissionCount: counts.total,
    spamCount: counts.spam,
  });
}
