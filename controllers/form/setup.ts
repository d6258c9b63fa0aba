import type { FormResource, SiteResource } from '../../src/kube/index.js';
import { Controller, objectKey } from '../runtime/controller.js';
import {
  annotationsChanged,
  anyOf,
  deletionOrFinalizersChanged,
  generationChanged,
  labelsChanged,
  watchPrimary,
  when,
} from '../runtime/predicates.js';
import type { ControllerContext, ControllerRegistration } from '../runtime/setup.js';
import { formReconciler } from './reconciler.js';
import { createMissingFormResources } from './resync.js';

/**
 * The Form updates that bring a pass: its spec, its deletion or finalizers, its annotations and
 * labels (the form-id link, and what the API selects by). Not a status write: the controller's
 * own, it brings nothing new to act on.
 */
const formChanged = anyOf<FormResource>(
  generationChanged,
  deletionOrFinalizersChanged,
  annotationsChanged,
  labelsChanged,
);

/**
 * The Site updates that concern its Forms: it was linked to a site (its status names the site
 * once the database says so), or its deletion began.
 */
const siteLinkChanged = anyOf<SiteResource>(
  (site, old) => site.status?.siteId !== old.status?.siteId,
  deletionOrFinalizersChanged,
);

/**
 * The Form controller: reconciles on every Form change but a status write and, when a Site is
 * linked (e.g. it was just adopted), the Forms naming it; every resync pass refreshes each Form's
 * counts and gives every database form without a Form resource one.
 */
export function setupFormController(context: ControllerContext): ControllerRegistration {
  const { clients, informers, logger, forms } = context;
  const formResources = informers.forKind('Form');
  const sites = informers.forKind('Site');
  const reconciler = formReconciler({ ...context, formResources, sites });
  const controller = new Controller({ name: 'form', reconciler, workers: context.workers, logger });

  watchPrimary(formResources, controller, formChanged);
  const enqueueFormsOf = (site: SiteResource): void => {
    for (const form of formResources.list()) {
      if (form.spec.siteRef?.name === site.metadata.name) controller.enqueue(objectKey(form));
    }
  };
  sites.on('add', enqueueFormsOf);
  sites.on('update', when(siteLinkChanged, enqueueFormsOf));

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
