import type { FormResource, SiteResource } from '../../src/kube/index.js';
import type { FieldInput } from '../../src/forms/index.js';
import type { Informer } from '../runtime/informer.js';
import type { ControllerContext } from '../runtime/setup.js';

/** What every part of the Form controller works with. */
export type FormContext = Pick<ControllerContext, 'config' | 'platform' | 'forms' | 'clients' | 'events'> & {
  /** The caches (read, never written): the reconciler's view of the cluster. */
  formResources: Pick<Informer<FormResource>, 'get' | 'list'>;
  sites: Pick<Informer<SiteResource>, 'get' | 'list'>;
};

/**
 * The fields of a form adopted from a Form resource: the CRD carries no fields (a form's fields
 * are edited through the API, which keeps their ids stable), so an adopted form starts as the
 * usual contact form. All three are required.
 */
export const ADOPTED_FORM_FIELDS: readonly FieldInput[] = [
  { name: 'name', label: 'Name', type: 'text', required: true },
  { name: 'email', label: 'Email', type: 'email', required: true },
  { name: 'message', label: 'Message', type: 'textarea', required: true },
];
