import { MANAGED_BY_LABEL, type SiteResource } from '../../src/kube/index.js';
import { Controller } from '../runtime/controller.js';
import type { KubernetesObject } from '@kubernetes/client-node';
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
import { CERTIFICATE_API_VERSION } from './certificates.js';
import type { CertificateObject } from './context.js';
import { GATEWAY_API_VERSION } from './httproute.js';
import { forgetSiteCertificates } from './metrics.js';
import { owningSiteName } from './owned.js';
import { siteReconciler } from './reconciler.js';
import { StaleRouting } from './routing-switch.js';
import { createMissingSiteResources } from './resync.js';

/**
 * The Site updates that bring a pass: its spec, its deletion or finalizers, its annotations (the
 * site-id link). Not a status write: the controller's own, it brings nothing new to act on.
 */
const siteChanged = anyOf<SiteResource>(generationChanged, deletionOrFinalizersChanged, annotationsChanged);

/** A routing object edited by hand (spec, labels or annotations), not the status its controller writes. */
const routeEdited = anyOf<KubernetesObject>(generationChanged, labelsChanged, annotationsChanged);

/**
 * The Site controller: reconciles on every Site change but a status write, on changes to the
 * Ingresses (or HTTPRoutes) it made (a hand edit or deletion brings their Site back in line), and
 * on every change of its Certificates (their status says when a certificate is issued); its resync
 * also gives every database site without a Site resource one.
 */
export function setupSiteController(context: ControllerContext): ControllerRegistration {
  const { clients, informers, logger, platform, config } = context;
  const kube = config.kubernetes;
  const managed = `${MANAGED_BY_LABEL}=${CONTROLLER_NAME}`;
  const sites = informers.forKind('Site');
  // Only the routing objects this controller made: the chart grants the kind of its mode only.
  const routes =
    kube.routing?.mode === 'gateway'
      ? informers.forPath<KubernetesObject>(
          'httproutes',
          `/apis/${GATEWAY_API_VERSION}/namespaces/${clients.namespace}/httproutes`,
          managed,
        )
      : informers.forPath<KubernetesObject>(
          'ingresses',
          `/apis/networking.k8s.io/v1/namespaces/${clients.namespace}/ingresses`,
          managed,
        );
  // Certificates, when an issuer is configured, as an optional informer: without cert-manager's
  // CRD its list fails (logged, retried with back-off) and nothing else waits for it.
  const certificates = kube.tls?.issuer
    ? informers.forOptionalPath<CertificateObject>(
        'certificates',
        `/apis/${CERTIFICATE_API_VERSION}/namespaces/${clients.namespace}/certificates`,
        managed,
      )
    : undefined;
  // One per leadership: what a controller in the other routing mode left, listed once.
  const staleRouting = new StaleRouting(context, logger);
  const reconciler = siteReconciler({ ...context, sites, routes, certificates, staleRouting });
  const controller = new Controller({ name: 'site', reconciler, workers: context.workers, logger });

  watchPrimary(sites, controller, siteChanged);
  const enqueueOwner = (object: KubernetesObject): void => {
    const owner = owningSiteName(object);
    if (owner) controller.enqueue(`${clients.namespace}/${owner}`);
  };
  routes.on('update', when(routeEdited, enqueueOwner));
  routes.on('delete', enqueueOwner);
  if (certificates) {
    certificates.on('add', enqueueOwner);
    certificates.on('update', enqueueOwner);
    certificates.on('delete', enqueueOwner);
  }

  return {
    controller,
    primary: sites,
    stop: forgetSiteCertificates,
    async resync(stopped) {
      const created = await createMissingSiteResources(platform, clients.sites, () => sites.list(), stopped);
      if (created > 0) logger.info({ created }, 'resync created Site resources for database sites');
    },
  };
}
