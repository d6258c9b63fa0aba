import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  NetworkingV1Api,
} from '@kubernetes/client-node';
import { makeKubeApi, type KubeApiOptions } from './api-client.js';
import { ResourceClient, resourceClient } from './resource-client.js';
import {
  siteKind,
  type FormResource,
  type SiteResource,
  type SqliteDatabaseResource,
} from './resource-kinds.js';

export {
  DEFAULT_KUBE_REQUEST_TIMEOUT_MS,
  KubeRequestTimeoutError,
  apiStatus,
  isConflict,
  isNotFound,
  makeKubeApi,
  type KubeApiOptions,
} from './api-client.js';
export { ResourceClient, resourceClient, type KindName, type ResourceTypes } from './resource-client.js';

/** Links a Site resource to its site in the control-plane database. */
export const SITE_ID_ANNOTATION = 'hostplane.dev/site-id';
/** Held by every Site until the controller has removed its routing (and, with Delete, its data). */
export const SITE_FINALIZER = 'hostplane.dev/site-cleanup';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const SITE_LABEL = 'hostplane.dev/site';
/** Links a Form resource to its form in the control-plane database (set by whoever created either). */
export const FORM_ID_ANNOTATION = 'hostplane.dev/form-id';
/** The same id as a label, so that the API finds a form's resource with a label selector. */
export const FORM_ID_LABEL = 'hostplane.dev/form-id';
/**
 * On a Form: the spec fields as the database held them when the resource was last brought in
 * line with it (JSON, written with them by the API and the controller). A spec that differs from
 * it was edited in the cluster; a database that differs from it changed since.
 */
export const FORM_APPLIED_ANNOTATION = 'hostplane.dev/applied-spec';
/** Held by every Form until the controller has deleted its form, submissions and pending mail. */
export const FORM_FINALIZER = 'hostplane.dev/form-cleanup';

/** In a pod: its service account; elsewhere: $KUBECONFIG or ~/.kube/config. */
export function kubeConfigFromEnvironment(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

/** Typed access to Site resources in one namespace (what the api role and the tests use). */
export class SiteResources extends ResourceClient<SiteResource> {
  constructor(kubeConfig: KubeConfig, namespace: string, fieldManager: string, options: KubeApiOptions = {}) {
    super(siteKind, kubeConfig, namespace, fieldManager, options);
  }
}

/** Every Kubernetes client a controller uses, all with the per-call deadline, for one namespace. */
export interface KubeClients {
  namespace: string;
  sites: ResourceClient<SiteResource>;
  forms: ResourceClient<FormResource>;
  sqliteDatabases: ResourceClient<SqliteDatabaseResource>;
  core: CoreV1Api;
  networking: NetworkingV1Api;
  coordination: CoordinationV1Api;
  /** Any object by apiVersion and kind (server-side apply, generic delete). */
  objects: KubernetesObjectApi;
}

export function kubeClients(
  kubeConfig: KubeConfig,
  namespace: string,
  fieldManager: string,
  options: KubeApiOptions = {},
): KubeClients {
  return {
    namespace,
    sites: resourceClient('Site', kubeConfig, namespace, fieldManager, options),
    forms: resourceClient('Form', kubeConfig, namespace, fieldManager, options),
    sqliteDatabases: resourceClient('SqliteDatabase', kubeConfig, namespace, fieldManager, options),
    core: makeKubeApi(kubeConfig, CoreV1Api, options),
    networking: makeKubeApi(kubeConfig, NetworkingV1Api, options),
    coordination: makeKubeApi(kubeConfig, CoordinationV1Api, options),
    objects: makeKubeApi(kubeConfig, KubernetesObjectApi, options),
  };
}
