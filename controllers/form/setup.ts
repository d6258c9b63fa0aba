import type { FormResource, SiteResource } from '../../src/kube/index.js';
import { Controller, objectKey } from '../runtime/controller.js';
import type { ControllerContext, ControllerRegistration } from '../runtime/setup.js';
import { formReconciler } from './reconciler.js';
import { createMissingFormResources } from './resync.js';

/**
 * The Form controller: reconciles on every Form change and, when a Site changes (e.g. it was
 * just adopted), the Forms naming it; every resync pass refreshes each Form's counts and gives
 * every database form without a Form resource one.
 */
export function setupFormController(context: ControllerContext): ControllerRegistration {
  const { clients, informers, logger, forms } = context;
  const formResources = informers.forKind('Form');
  const sites = informers.forKind('Site');
  const reconciler = formReconciler({ ...context, formResources, sites });
  const controller = new Controller({ name: 'form', reconciler, workers: context.workers, logger });

  const enqueueForm = (form: FormResource): void => controller.enqueue(objectKey(form));
  formResources.on('add', enqueueForm);
  formResources.on('update', enqueueForm);
  formResources.on('delete', enqueueForm);
  const enqueueFormsOf = (site: SiteResource): void => {
    for (const form of formResources.list()) {
      if (form.spec.siteRef?.name === site.metadata.name) enqueueForm(form);
    }
  };
  sites.on('add', enqueueFormsOf);
  sites.on('update', enqueueFormsOf);

  return {
    controller,
    primary: formResources,
    async resync(stopped) {
      const created = await createMissingFormResources(
        forms,
        clients.forms,
        { forms: () => formResources.list(), sites: () => sites.list() },
        stopped,
      );
      if (created > 0) logger.info({ created }, 'resync created Form resources for database forms');
    },
  };
}
