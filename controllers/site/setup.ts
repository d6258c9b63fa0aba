import type { V1Ingress } from '@kubernetes/client-node';
import { MANAGED_BY_LABEL, type SiteResource } from '../../src/kube/index.js';
import { Controller } from '../runtime/controller.js';
import {
  annotationsChanged,
  anyOf,
  deletionOrFinalizersChanged,
  generationChanged,
  labelsChanged,
  watchPrimary,
  when,
} from '../runtime/predicates.js';
import { CONTROLLER_NAME, type ControllerContext, type ControllerRegistration } from '../runtime/setup.js';
import { owningSiteName } from './ingress.js';
import { siteReconciler } from './reconciler.js';
import { createMissingSiteResources } from './resync.js';

/**
 * The Site updates that bring a pass: its spec, its deletion or finalizers, its annotations (the
 * site-id link). Not a status write: the controller's own, it brings nothing new to act on.
 */
const siteChanged = anyOf<SiteResource>(generationChanged, deletionOrFinalizersChanged, annotationsChanged);

/** An Ingress edited by hand (spec, labels or annotations), not the status its ingress controller writes. */
const ingressEdited = anyOf<V1Ingress>(generationChanged, labelsChanged, annotationsChanged);

/**
 * The Site controller: reconciles on every Site change but a status write, and on changes to the
 * Ingresses it made (a hand edit or deletion brings their Site back in line); its resync also
 * gives every database site without a Site resource one.
 */
export function setupSiteController(context: ControllerContext): ControllerRegistration {
  const { clients, informers, logger, platform } = context;
  const sites = informers.forKind('Site');
  // Only the Ingresses this controller made.
  const ingresses = informers.forPath<V1Ingress>(
    'ingresses',
    `/apis/networking.k8s.io/v1/namespaces/${clients.namespace}/ingresses`,
    `${MANAGED_BY_LABEL}=${CONTROLLER_NAME}`,
  );
  const reconciler = siteReconciler({ ...context, sites, ingresses });
  const controller = new Controller({ name: 'site', reconciler, workers: context.workers, logger });

  watchPrimary(sites, controller, siteChanged);
  const enqueueOwner = (ingress: V1Ingress): void => {
    const owner = owningSiteName(ingress);
    if (owner) controller.enqueue(`${clients.namespace}/${owner}`);
  };
  ingresses.on('update', when(ingressEdited, enqueueOwner));
  ingresses.on('delete', enqueueOwner);

  return {
    controller,
    primary: sites,
    async resync(stopped) {
      const created = await createMissingSiteResources(platform, clients.sites, () => sites.list(), stopped);
      if (created > 0) logger.info({ created }, 'resync created Site resources for database sites');
    },
  };
}
