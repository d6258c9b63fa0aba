import { FORM_FINALIZER, formSpecSchema } from '../../src/kube/index.js';
import type { Reconciler } from '../runtime/controller.js';
import { ResourceReconciler } from '../runtime/reconcile.js';
import type { FormContext } from './context.js';
import { cleanUpForm } from './deletion.js';
import { orchestrateForm } from './orchestration.js';

/**
 * The Form's parts of the reconcile pass (runtime/reconcile.ts runs them): a live Form is linked
 * to its database form, which then follows the spec (orchestration.ts); a deleted one takes its
 * form, submissions and pending mail with it (deletion.ts).
 */
export function formReconciler(context: FormContext): Reconciler {
  return new ResourceReconciler({
    cache: context.formResources,
    client: context.clients.forms,
    events: context.events,
    finalizer: FORM_FINALIZER,
    specSchema: formSpecSchema,
    cleanUp: (resource) => cleanUpForm(context, resource),
    orchestrate: (resource, spec) => orchestrateForm(context, resource, spec),
  });
}
